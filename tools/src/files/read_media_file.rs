//! `read_media_file`: an image or audio file, for a model that can see or hear it.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use crate::Failure;

/// Most bytes of a media file read (its base64 is a third larger).
const MAX_MEDIA_BYTES: u64 = 8 * 1024 * 1024;

/// Read an image (PNG, JPEG, GIF, WebP) or audio file (MP3, WAV, OGG, FLAC, M4A) of at most 8 MiB,
/// as an MCP image or audio content block.
#[tool(
    name = "read_media_file",
    title = "Read media file",
    category = "files",
    effect = "read"
)]
pub struct ReadMediaFile {
    /// Workspace-relative path.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
}

/// A media file.
#[kyro_core::output]
#[derive(Debug)]
pub struct MediaFile {
    /// The path as given.
    pub path: String,
    /// Its type, from its extension (`image/png`, `audio/mpeg`).
    pub mime_type: String,
    /// The content, base64-encoded (over MCP: in the content block, and this field names it).
    pub data: String,
    /// Size in bytes.
    pub size: u64,
}

/// The media type of a file name, by its extension, and the bytes such a file starts with
/// (`?` any byte).
fn media_type(path: &str) -> Option<(&'static str, &'static [&'static [u8]])> {
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => ("image/png", &[b"\x89PNG\r\n\x1a\n"]),
        "jpg" | "jpeg" => ("image/jpeg", &[b"\xff\xd8\xff"]),
        "gif" => ("image/gif", &[b"GIF87a", b"GIF89a"]),
        "webp" => ("image/webp", &[b"RIFF????WEBP"]),
        "mp3" => ("audio/mpeg", &[b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"]),
        "wav" => ("audio/wav", &[b"RIFF????WAVE"]),
        "ogg" | "oga" => ("audio/ogg", &[b"OggS"]),
        "flac" => ("audio/flac", &[b"fLaC"]),
        "m4a" => ("audio/mp4", &[b"????ftyp"]),
        _ => return None,
    })
}

/// Whether `bytes` start as one of `signatures` says.
fn starts_as(bytes: &[u8], signatures: &[&[u8]]) -> bool {
    signatures.iter().any(|signature| {
        bytes.len() >= signature.len() && signature.iter().zip(bytes).all(|(s, b)| *s == b'?' || s == b)
    })
}

impl Execute for ReadMediaFile {
    type Output = MediaFile;

    fn text(out: &MediaFile) -> Option<String> {
        Some(format!("{}: {}, {} bytes", out.path, out.mime_type, out.size))
    }

    async fn run(self, cx: &ToolContext) -> Result<MediaFile, ToolError> {
        let given = self.path.as_str().to_owned();
        let Some((mime_type, signatures)) = media_type(&given) else {
            return Err(Failure::InvalidRequest {
                message: format!(
                    "`{given}` is not an image or audio file by its extension (png, jpg, gif, webp, mp3, wav, ogg, flac, m4a); read text with read_file"
                ),
            }
            .into());
        };
        let path = cx.path(&self.path)?;
        let info = path.info(true)?;
        if info.kind != EntryType::File {
            return Err(ToolError::NotAFile { path: given });
        }
        if info.size > MAX_MEDIA_BYTES {
            return Err(ToolError::io(
                "read",
                &given,
                &std::io::Error::other(format!(
                    "the file is {} bytes, over the {MAX_MEDIA_BYTES}-byte limit for a media file",
                    info.size
                )),
            ));
        }
        // One handle, read to the limit: a file grown since its size was read is refused.
        let mut bytes = Vec::new();
        use std::io::Read;
        path.open()?
            .take(MAX_MEDIA_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io("read", &given, &e))?;
        if bytes.len() as u64 > MAX_MEDIA_BYTES {
            return Err(ToolError::io(
                "read",
                &given,
                &std::io::Error::other("the file grew past the limit while it was read"),
            ));
        }
        // A model's API refuses an image that is not one, and then every later turn of
        // the conversation that carries it: the bytes must say what the name says.
        if !starts_as(&bytes, signatures) {
            return Err(Failure::InvalidRequest {
                message: format!("`{given}` does not hold {mime_type}: its first bytes say otherwise"),
            }
            .into());
        }
        Ok(MediaFile {
            path: given,
            mime_type: mime_type.to_owned(),
            size: bytes.len() as u64,
            data: BASE64_STANDARD.encode(&bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn reads_an_image_as_base64_with_its_type_and_refuses_what_is_not_media() {
        let ws = workspace();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        std::fs::write(ws.path().join("pic.PNG"), png).unwrap();
        let read = ok(call(ws.path(), "read_media_file", json!({"path": "pic.PNG"})));
        assert_eq!(read["mime_type"], "image/png");
        assert_eq!(read["size"], png.len());
        assert_eq!(read["data"], "iVBORw0KGgoAAAANSUhEUg==");
        std::fs::write(ws.path().join("a.mp3"), b"ID3").unwrap();
        // Named as an image, not one: refused, not sent as an image block.
        std::fs::write(ws.path().join("fake.png"), b"<svg/>").unwrap();
        let error = failed(call(ws.path(), "read_media_file", json!({"path": "fake.png"})));
        assert!(error.to_string().contains("does not hold image/png"), "{error}");
        assert_eq!(
            ok(call(ws.path(), "read_media_file", json!({"path": "a.mp3"})))["mime_type"],
            "audio/mpeg"
        );
        std::fs::write(ws.path().join("notes.txt"), "x").unwrap();
        let error = failed(call(ws.path(), "read_media_file", json!({"path": "notes.txt"})));
        assert_eq!(error.kind(), "invalid_request");
        assert!(error.to_string().contains("read_file"), "{error}");
        // Too large: refused before it is read.
        let big = std::fs::File::create(ws.path().join("big.wav")).unwrap();
        big.set_len(super::MAX_MEDIA_BYTES + 1).unwrap();
        let error = failed(call(ws.path(), "read_media_file", json!({"path": "big.wav"})));
        assert!(error.to_string().contains("over the 8388608-byte limit"), "{error}");
    }
}
