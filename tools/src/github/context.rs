//! GitHub's `context` toolset: who the token is, and the teams around them.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{GitHub, encode, paging};
use super::wire::{User, list};

/// Get the token's GitHub user (login, name, profile, counts): whose issues, pull requests and
/// repositories "my" means.
#[tool(
    name = "github_get_me",
    title = "Get my GitHub user",
    category = "github.context",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_me"]
)]
pub struct GitHubGetMe {}

/// A GitHub user.
#[kyro_core::output]
#[derive(Debug)]
pub struct Me {
    /// The login.
    pub login: String,
    /// The numeric id.
    pub id: u64,
    /// The display name, when set.
    pub name: Option<String>,
    /// The public email, when set.
    pub email: Option<String>,
    /// The bio, when set.
    pub bio: Option<String>,
    /// The company, when set.
    pub company: Option<String>,
    /// The profile's address.
    pub html_url: String,
    /// Public repositories.
    pub public_repos: u64,
    /// Followers.
    pub followers: u64,
}

/// The user, as GitHub sends it (`/user`).
#[derive(Deserialize)]
struct MeWire {
    login: String,
    id: u64,
    name: Option<String>,
    email: Option<String>,
    bio: Option<String>,
    company: Option<String>,
    html_url: String,
    public_repos: u64,
    followers: u64,
}

/// A text the user may leave unset (null or empty).
fn optional(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.is_empty())
}

impl Execute for GitHubGetMe {
    type Output = Me;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Me, ToolError> {
        let v: MeWire = GitHub::for_call(cx)?.send(cx, "GET", "/user", None)?.parse()?;
        Ok(Me {
            login: v.login,
            id: v.id,
            name: optional(v.name),
            email: optional(v.email),
            bio: optional(v.bio),
            company: optional(v.company),
            html_url: v.html_url,
            public_repos: v.public_repos,
            followers: v.followers,
        })
    }
}

/// List the token user's teams in every organization.
#[tool(
    name = "github_get_teams",
    title = "Get my GitHub teams",
    category = "github.context",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_teams"]
)]
pub struct GitHubGetTeams {
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// Teams.
#[kyro_core::output]
#[derive(Debug)]
pub struct Teams {
    /// The teams.
    pub teams: Vec<Team>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// One team.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Team {
    /// The organization's login.
    pub org: String,
    /// The team's slug (for `github_get_team_members`).
    pub slug: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// A team, as GitHub sends it (`/user/teams`).
#[derive(Deserialize)]
struct TeamWire {
    organization: User,
    slug: String,
    name: String,
    description: Option<String>,
}

impl Execute for GitHubGetTeams {
    type Output = Teams;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Teams, ToolError> {
        let path = format!("/user/teams?{}", paging(self.page, self.per_page));
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let teams = list::<TeamWire>(&answer)?
            .into_iter()
            .map(|t| Team {
                org: t.organization.login,
                slug: t.slug,
                name: t.name,
                description: t.description.unwrap_or_default(),
            })
            .collect();
        Ok(Teams {
            teams,
            next_page: answer.next_page,
        })
    }
}

/// List a GitHub team's members by login.
#[tool(
    name = "github_get_team_members",
    title = "Get GitHub team members",
    category = "github.context",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_team_members"]
)]
pub struct GitHubGetTeamMembers {
    /// Organization login.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9][A-Za-z0-9-]*$"))]
    pub org: String,
    /// Team slug.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9_][A-Za-z0-9_.-]*$"))]
    pub team_slug: String,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// Logins.
#[kyro_core::output]
#[derive(Debug)]
pub struct Members {
    /// The members' logins.
    pub members: Vec<String>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

impl Execute for GitHubGetTeamMembers {
    type Output = Members;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Members, ToolError> {
        let path = format!(
            "/orgs/{}/teams/{}/members?{}",
            encode(&self.org),
            encode(&self.team_slug),
            paging(self.page, self.per_page)
        );
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        Ok(Members {
            members: list::<User>(&answer)?.into_iter().map(|u| u.login).collect(),
            next_page: answer.next_page,
        })
    }
}
