//! Our model of a `#[tool]` struct, parsed from syn. Parsing records mistakes and goes on.

use proc_macro2::{Span, TokenStream};
use syn::{DeriveInput, Expr, Ident, LitStr};

use crate::attr::{self, SerdeKey};
use crate::errors::Errors;

/// A tool as written.
pub struct Tool<'a> {
    pub item: &'a DeriveInput,
    pub ident: &'a Ident,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub category: Option<LitStr>,
    pub effect: Option<LitStr>,
    pub approval: Option<LitStr>,
    /// `task = "optional"`: a call may run as a task (MCP tasks extension).
    pub task: Option<LitStr>,
    /// `inline = true`: the executor never blocks and runs on the task serving the call.
    pub inline: Option<syn::LitBool>,
    /// `read_only`, `destructive`, `idempotent`, `open_world`, as stated.
    pub hints: [Option<syn::LitBool>; 4],
    pub aliases: Vec<LitStr>,
    pub capabilities: Option<Vec<LitStr>>,
    pub description: Option<String>,
    /// The description as a `concat!` of its parts, when a doc attribute is a macro
    /// (`#[doc = include_str!("...")]`) whose text only the compiler knows.
    pub description_tokens: Option<TokenStream>,
    pub serde: Vec<SerdeKey>,
    /// `None` when the item is not a struct with named fields (already reported).
    pub fields: Option<Vec<Field<'a>>>,
}

/// An argument field.
pub struct Field<'a> {
    pub field: &'a syn::Field,
    pub ident: &'a Ident,
    pub doc: Option<String>,
    pub aliases: Vec<LitStr>,
    pub any_value: bool,
    pub serde: Vec<SerdeKey>,
}

impl<'a> Tool<'a> {
    pub fn from_syn(errors: &Errors, args: TokenStream, item: &'a DeriveInput) -> Tool<'a> {
        let mut tool = Tool {
            item,
            ident: &item.ident,
            name: None,
            title: None,
            category: None,
            effect: None,
            approval: None,
            task: None,
            inline: None,
            hints: [None, None, None, None],
            aliases: Vec::new(),
            capabilities: None,
            description: attr::doc_comment(&item.attrs),
            description_tokens: attr::doc_tokens(&item.attrs),
            serde: attr::serde_keys(errors, &item.attrs),
            fields: None,
        };
        tool.parse_args(errors, args);
        tool.fields = fields(errors, item);
        tool
    }

    fn parse_args(&mut self, errors: &Errors, args: TokenStream) {
        let mut aliases_given = false;
        let parser = syn::meta::parser(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            let known = [
                attr::NAME,
                attr::TITLE,
                attr::CATEGORY,
                attr::EFFECT,
                attr::ALIASES,
                attr::CAPABILITIES,
                attr::APPROVAL,
                attr::TASK,
            ];
            if key == attr::INLINE {
                let value: Expr = meta.value()?.parse()?;
                if self.inline.is_some() {
                    errors.at(&meta.path, format_args!("`{key}` is given twice; keep one"));
                }
                self.inline = attr::lit_bool(errors, &key, &value);
                return Ok(());
            }
            if let Some(i) = attr::HINTS.iter().position(|h| *h == key) {
                let value: Expr = meta.value()?.parse()?;
                if self.hints[i].is_some() {
                    errors.at(&meta.path, format_args!("`{key}` is given twice; keep one"));
                }
                self.hints[i] = attr::lit_bool(errors, &key, &value);
                return Ok(());
            }
            if !known.contains(&key.as_str()) {
                errors.at(
                    &meta.path,
                    format_args!(
                        "unknown `tool` key `{}`; expected {}",
                        path_text(&meta.path),
                        attr::CONTAINER_KEYS
                    ),
                );
                return attr::skip_value(meta.input);
            }
            let value: Expr = meta.value()?.parse()?;
            let slot = match key.as_str() {
                attr::NAME => &mut self.name,
                attr::TITLE => &mut self.title,
                attr::CATEGORY => &mut self.category,
                attr::EFFECT => &mut self.effect,
                attr::APPROVAL => &mut self.approval,
                attr::TASK => &mut self.task,
                attr::ALIASES => {
                    if std::mem::replace(&mut aliases_given, true) {
                        errors.at(
                            &meta.path,
                            format_args!("`{key}` is given twice; list every alias in one `{key} = [...]`"),
                        );
                    }
                    self.aliases.extend(attr::lit_str_array(errors, &key, &value));
                    return Ok(());
                }
                _ => {
                    if self.capabilities.is_some() {
                        errors.at(
                            &meta.path,
                            format_args!("`{key}` is given twice; list every capability in one `{key} = [...]`"),
                        );
                    }
                    self.capabilities = Some(attr::lit_str_array(errors, &key, &value));
                    return Ok(());
                }
            };
            if slot.is_some() {
                errors.at(&meta.path, format_args!("`{key}` is given twice; keep one"));
            }
            *slot = attr::lit_str(errors, &key, &value);
            Ok(())
        });
        if let Err(err) = syn::parse::Parser::parse2(parser, args) {
            errors.push(err);
        }
    }

    /// The span to report tool-level omissions at: the struct's name.
    pub fn span(&self) -> Span {
        self.ident.span()
    }
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn fields<'a>(errors: &Errors, item: &'a DeriveInput) -> Option<Vec<Field<'a>>> {
    let data = match &item.data {
        syn::Data::Struct(data) => data,
        syn::Data::Enum(data) => {
            errors.at(
                data.enum_token,
                "tool arguments must be a struct with named fields; found an enum",
            );
            return None;
        }
        syn::Data::Union(data) => {
            errors.at(
                data.union_token,
                "tool arguments must be a struct with named fields; found a union",
            );
            return None;
        }
    };
    match &data.fields {
        syn::Fields::Named(named) => Some(named.named.iter().map(|f| field(errors, f)).collect()),
        syn::Fields::Unnamed(unnamed) => {
            errors.at(
                unnamed,
                "tool arguments must be a struct with named fields; found a tuple struct",
            );
            None
        }
        syn::Fields::Unit => {
            errors.at(
                &item.ident,
                "tool arguments must be a struct with named fields; found a unit struct (write `struct Name {}` for a tool without arguments)",
            );
            None
        }
    }
}

fn field<'a>(errors: &Errors, field: &'a syn::Field) -> Field<'a> {
    let ident = field.ident.as_ref().expect("named field");
    let mut parsed = Field {
        field,
        ident,
        doc: attr::doc_comment(&field.attrs),
        aliases: Vec::new(),
        any_value: false,
        serde: attr::serde_keys(errors, &field.attrs),
    };
    for a in field.attrs.iter().filter(|a| a.path().is_ident(attr::TOOL)) {
        let result = a.parse_nested_meta(|meta| {
            if meta.path.is_ident(attr::ALIAS) {
                let value: Expr = meta.value()?.parse()?;
                parsed.aliases.extend(attr::lit_str(errors, attr::ALIAS, &value));
            } else if meta.path.is_ident(attr::ANY_VALUE) {
                parsed.any_value = true;
            } else {
                errors.at(
                    &meta.path,
                    format_args!(
                        "unknown `tool` field key `{}`; expected alias or any_value",
                        path_text(&meta.path)
                    ),
                );
                attr::skip_value(meta.input)?;
            }
            Ok(())
        });
        if let Err(err) = result {
            errors.push(err);
        }
    }
    parsed
}
