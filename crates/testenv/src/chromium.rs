//! Headless Chromium for the tests that check a page as a reader's browser shows it: the
//! report pages (`storsim report`, `storsim sweep`). The browser is Debian's `chromium`;
//! without it the test is [`missing`](crate::missing) it.

use std::path::Path;
use std::process::Command;

/// The Chromium binary, or `None` after reporting it missing.
#[track_caller]
pub fn browser() -> Option<&'static str> {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(name);
        }
    }
    crate::missing("chromium is not installed (Debian package `chromium`)");
    None
}

/// What Chromium made of a page.
pub struct Rendered {
    /// The DOM after the page's scripts ran.
    pub dom: String,
    /// Chromium's log: its console messages are the lines holding `CONSOLE`.
    pub log: String,
}

impl Rendered {
    /// The page's console messages (a page that logs nothing has none but errors).
    pub fn console(&self) -> Vec<&str> {
        self.log.lines().filter(|l| l.contains("CONSOLE")).collect()
    }
}

/// Renders `page` in headless Chromium (`browser`, from [`browser`]) in a window of
/// `width` × `height` CSS pixels: returns the DOM and the log, and writes a screenshot beside
/// the page (`page` with the extension `png`), checked to be a PNG with more than a blank
/// page in it. Chromium's profile lives in a folder beside the page. Panics when Chromium
/// fails: this is for tests.
pub fn render(browser: &str, page: &Path, (width, height): (u32, u32)) -> Rendered {
    let url = format!("file://{}", page.display());
    let profile = page.with_extension("chromium-profile");
    let run = |extra: &str| {
        let o = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(extra)
            .arg(&url)
            .output()
            .expect("chromium runs");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "chromium on {url}: {stderr}");
        (String::from_utf8_lossy(&o.stdout).into_owned(), stderr)
    };
    let (dom, dom_log) = run("--dump-dom");
    let shot = page.with_extension("png");
    let (_, shot_log) = run(&format!("--screenshot={}", shot.display()));
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert_eq!(&png[1..4], b"PNG");
    // A blank page compresses to a few kilobytes; any page of plots to far more.
    assert!(
        png.len() > 10_000,
        "the screenshot of {url} is nearly empty"
    );
    let _ = std::fs::remove_dir_all(&profile);
    Rendered {
        dom,
        log: format!("{dom_log}{shot_log}"),
    }
}
