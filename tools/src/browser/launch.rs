//! Starting Chromium: the executable, its flags, and the process, owned by a thread of
//! its own for its whole life and killed (with its process group) when dropped.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use kyro_core::ToolError;
use rustix::process::{Pid, Signal, kill_process_group};

use super::isolation::Handoff;
use super::report::error;

/// The environment variable naming the Chromium executable.
pub const CHROMIUM_ENV: &str = "KYRO_CHROMIUM";
/// Where Debian's `chromium` package puts it.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// How long Chromium may take to start and print its DevTools address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Flags that work without a network and without a display. `--no-sandbox` because CI runs
/// as root, where Chromium's sandbox refuses to start.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--disable-breakpad",
    // Cross-site frames in the page's own renderer: a frame given a process (and a
    // DevTools target) of its own would make requests the page's Fetch interception never
    // sees, out of reach of the network policy.
    "--disable-site-isolation-trials",
    "--disable-features=Translate,MediaRouter,OptimizationHints,IsolateOrigins,site-per-process,\
NetworkTimeServiceQuerying,AutofillServerCommunication,CertificateTransparencyComponentUpdater,\
PreconnectToSearch,SearchEnginePreconnector,SearchEnginePreconnect2",
    // Chromium's own traffic, which the proxy would otherwise have to refuse (or let out).
    // WebRTC's UDP goes past the proxy (its own lookups, any address, data in TURN
    // usernames): none but proxied. In the network namespace it reaches nothing anyway;
    // this holds where Chromium runs bare.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-pings",
    "--no-service-autorun",
    "--metrics-recording-only",
    "--disable-field-trial-config",
    // Sign-in and component-update endpoints pointed at a port nothing listens on.
    "--gaia-url=http://127.0.0.1:9",
    "--component-updater=url-source=http://127.0.0.1:9",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    "--window-size=1280,800",
    "--remote-debugging-address=127.0.0.1",
];

/// The Chromium executable: `KYRO_CHROMIUM`, or `/usr/bin/chromium`.
pub fn chromium_path() -> PathBuf {
    std::env::var_os(CHROMIUM_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CHROMIUM))
}

/// Why the browser tools cannot work on this machine, or `None` when they can.
pub fn unavailable() -> Option<String> {
    let path = chromium_path();
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() && std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0 => None,
        Ok(_) => Some(format!("{} is not an executable file", path.display())),
        Err(_) => Some(format!(
            "no Chromium at {}; install Debian's `chromium` package or set {CHROMIUM_ENV} to a Chromium executable",
            path.display()
        )),
    }
}

/// The Chromium process, owned by its thread; dropping this kills the process group and
/// waits for it.
pub(super) struct Process {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    exited: Arc<AtomicBool>,
    _sandbox: kyro_core::sandbox::Sandbox,
    _profile: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Process {
    /// Starts Chromium and returns it with its DevTools WebSocket address: in a network
    /// namespace of its own when there is a `handoff` to bring kyro's sockets out of it
    /// (the proxy is then at its known address inside), on the host's otherwise.
    pub(super) fn start(
        executable: &Path,
        proxy: std::net::SocketAddr,
        handoff: Option<&Handoff>,
        readable: &[PathBuf],
    ) -> Result<(Process, String), ToolError> {
        let profile = tempfile::Builder::new()
            .prefix("kyro-chromium-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|e| error("create a profile directory", e))?;
        let sandbox = super::isolation::sandbox(executable, profile.path(), readable)?;
        let port = handoff.map_or(0, |_| super::isolation::DEVTOOLS_PORT);
        let mut command = Command::new(executable);
        command
            .args(FLAGS)
            .arg(format!("--remote-debugging-port={port}"))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            // Every request through kyro's proxy, loopback ones too (Chromium bypasses
            // proxies for loopback unless told `<-loopback>`).
            .arg(format!("--proxy-server=http://{proxy}"))
            .arg("--proxy-bypass-list=<-loopback>")
            .arg("about:blank")
            // Nothing of kyro's environment (tokens, a state URL's password): what a page
            // could ever read of Chromium's is its own.
            .env_clear()
            .envs(
                ["PATH", "LANG", "LC_ALL", "TZ"]
                    .iter()
                    .filter_map(|k| std::env::var_os(k).map(|v| (k, v))),
            )
            .env("HOME", profile.path())
            .current_dir(profile.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        sandbox.apply(&mut command);
        // After the sandbox's closure: entering a user namespace clears the death signal.
        // SAFETY: only an async-signal-safe prctl between fork and exec.
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(std::io::Error::from)
            });
        }
        if let Some(handoff) = handoff {
            handoff.arm(&mut command);
        }
        let (ready_tx, ready_rx) = mpsc::channel::<Result<String, String>>();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let exited = Arc::new(AtomicBool::new(false));
        let flag = exited.clone();
        let thread = std::thread::Builder::new()
            .name("kyro-chromium".into())
            .spawn(move || own(command, ready_tx, stop_rx, flag))
            .map_err(|e| error("start", e))?;
        let process = Process {
            stop: Some(stop_tx),
            thread: Some(thread),
            exited,
            _sandbox: sandbox,
            _profile: profile,
        };
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(url)) => Ok((process, url)),
            Ok(Err(message)) => Err(error("start", message)),
            Err(_) => Err(error(
                "start",
                format!(
                    "Chromium did not print its DevTools address within {}s",
                    START_TIMEOUT.as_secs()
                ),
            )),
        }
    }

    pub(super) fn alive(&self) -> bool {
        !self.exited.load(Ordering::SeqCst)
    }
}

/// The owning thread: spawns, reports the address, waits to be told to stop (or for the
/// session to be dropped), then kills the group and reaps the leader.
fn own(
    mut command: Command,
    ready: mpsc::Sender<Result<String, String>>,
    stop: mpsc::Receiver<()>,
    exited: Arc<AtomicBool>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot run {:?}: {e}", command.get_program())));
            return;
        }
    };
    let pid = child.id();
    if let Some(stderr) = child.stderr.take() {
        let ready = ready.clone();
        std::thread::spawn(move || {
            let mut tail = Vec::new();
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = ready.send(Ok(url.trim().to_owned()));
                    sent = true;
                } else if !sent {
                    tail.push(line);
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
            }
            if !sent {
                let _ = ready.send(Err(format!(
                    "Chromium exited before it was ready: {}",
                    tail.join(" | ")
                )));
            }
        });
    }
    // Wait to be stopped, noticing when Chromium exits on its own (a crash).
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(Duration::from_millis(250)) {
        if !exited.load(Ordering::SeqCst) && matches!(child.try_wait(), Ok(Some(_))) {
            exited.store(true, Ordering::SeqCst);
        }
    }
    if let Some(pgid) = Pid::from_raw(pid as i32) {
        let _ = kill_process_group(pgid, Signal::KILL);
    }
    let _ = child.wait();
}
