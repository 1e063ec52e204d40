//! Reading a text file whole (for the tools that edit it) or its first bytes, and the
//! chunked UTF-8 check the readers share.

use crate::Failure;
use kyro_core::{ConfinedPath, ToolError};

/// Most bytes read whole into memory by the tools that edit a file.
const MAX_WHOLE_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The first bytes of a text file, read once in chunks.
pub(crate) struct Prefix {
    /// At most the bytes asked for, cut at a character boundary.
    pub content: String,
    /// True when the file holds more.
    pub truncated: bool,
    /// SHA-256 of the whole file.
    pub sha256: String,
}

/// Reads `path` once, in fixed-size chunks, keeping its first `max` bytes: the hash and the
/// binary/UTF-8 check cover the whole file, the memory only what is kept.
pub(crate) fn read_prefix(path: &ConfinedPath, max: usize) -> Result<Prefix, ToolError> {
    use sha2::Digest;
    use std::io::Read;
    let given = path.given().to_owned();
    if path.info(true)?.kind != kyro_core::EntryType::File {
        return Err(ToolError::NotAFile { path: given });
    }
    let binary = || ToolError::from(Failure::BinaryFile { path: given.clone() });
    let mut file = path.open()?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut carry = Vec::new();
    let mut kept = Vec::new();
    let mut truncated = false;
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ToolError::io("read", &given, &e)),
        };
        let chunk = &buffer[..n];
        hasher.update(chunk);
        if chunk.contains(&0) {
            return Err(binary());
        }
        check_utf8(&mut carry, chunk).map_err(|_| binary())?;
        let room = max - kept.len();
        kept.extend_from_slice(&chunk[..room.min(n)]);
        truncated |= n > room;
    }
    if !carry.is_empty() {
        return Err(binary());
    }
    // The file is UTF-8; the cut may fall inside a character: end at the last whole one.
    let whole = std::str::from_utf8(&kept).map_or_else(|e| e.valid_up_to(), str::len);
    kept.truncate(whole);
    Ok(Prefix {
        content: String::from_utf8(kept).map_err(|_| binary())?,
        truncated,
        sha256: format!("{:x}", hasher.finalize()),
    })
}

/// Bytes that are not UTF-8.
pub(super) struct NotUtf8;

/// Checks that `chunk`, after what `carry` held over from the last chunk, is UTF-8; an
/// incomplete character at the end is carried to the next chunk.
pub(super) fn check_utf8(carry: &mut Vec<u8>, chunk: &[u8]) -> Result<(), NotUtf8> {
    let joined;
    let bytes = if carry.is_empty() {
        chunk
    } else {
        carry.extend_from_slice(chunk);
        joined = std::mem::take(carry);
        &joined[..]
    };
    match std::str::from_utf8(bytes) {
        Ok(_) => {
            carry.clear();
            Ok(())
        }
        Err(e) if e.error_len().is_none() => {
            *carry = bytes[e.valid_up_to()..].to_vec();
            Ok(())
        }
        Err(_) => Err(NotUtf8),
    }
}

/// Reads a regular file whole (for the tools that edit it), refusing files with NUL bytes
/// as binary and files over 64 MiB.
pub(crate) fn read_text_bytes(path: &ConfinedPath) -> Result<Vec<u8>, ToolError> {
    let size = path.info(true)?.size;
    if size > MAX_WHOLE_FILE_BYTES {
        return Err(ToolError::io(
            "read",
            path.given(),
            &std::io::Error::other(format!(
                "the file is {size} bytes, over the {MAX_WHOLE_FILE_BYTES}-byte limit for reading it whole; read_file reads it a window at a time"
            )),
        ));
    }
    let bytes = path.read()?;
    if bytes.contains(&0) {
        return Err(Failure::BinaryFile {
            path: path.given().to_owned(),
        }
        .into());
    }
    Ok(bytes)
}
