//! A Motion-JPEG AVI writer: the screencast's JPEG frames, as they are (no decoding, no
//! encoder), in a RIFF container every common player reads.
//!
//! The file, in order (every chunk is a four-character code, a little-endian `u32` size,
//! then that many bytes, padded to an even length):
//!
//! ```text
//! RIFF 'AVI '
//!   LIST 'hdrl'
//!     avih               the main header: frame period, frame count, size
//!     LIST 'strl'
//!       strh             the one stream: video ('vids'), MJPG, rate/scale = fps
//!       strf             its format: a BITMAPINFOHEADER with compression MJPG
//!   LIST 'movi'
//!     00dc ...           one chunk per frame: a whole JPEG (FF D8 ... FF D9)
//!   idx1                 one 16-byte entry per frame: '00dc', keyframe, offset, size
//! ```
//!
//! Frames are placed at the requested rate from the screencast's timestamps ([`place`]):
//! Chromium sends a frame only when the page changes, so a frame is repeated until the
//! next one arrives, and frames closer together than the rate are dropped.

/// One captured frame: when Chromium drew it (seconds since the Unix epoch) and the JPEG.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub at: f64,
    pub jpeg: Vec<u8>,
}

/// What the writer puts around one frame: its chunk header, padding and index entry.
const PER_FRAME: usize = 8 + 1 + 16;
/// The headers before the first frame: RIFF, LIST hdrl, avih, LIST strl, strh, strf,
/// LIST movi.
const HEADERS: usize = 12 + 12 + 64 + 12 + 64 + 48 + 12;

/// The frames of the video at `fps` from `start` to `end` (seconds since the epoch): for
/// each output frame, the index of the last captured frame drawn at or before its time
/// (the first captured frame before any was drawn). Stops early, with `true`, where the
/// file would pass `max_file` bytes.
pub(crate) fn place(frames: &[Frame], start: f64, end: f64, fps: f64, max_file: usize) -> (Vec<usize>, bool) {
    if frames.is_empty() {
        return (Vec::new(), false);
    }
    let count = (((end - start).max(0.0) * fps).ceil() as usize).max(1);
    let mut placed = Vec::with_capacity(count.min(1 << 16));
    let (mut next, mut bytes) = (0, HEADERS + 8);
    for i in 0..count {
        let at = start + i as f64 / fps;
        while next + 1 < frames.len() && frames[next + 1].at <= at {
            next += 1;
        }
        bytes += frames[next].jpeg.len() + PER_FRAME;
        if bytes > max_file {
            return (placed, true);
        }
        placed.push(next);
    }
    (placed, false)
}

/// The width and height a JPEG declares in its start-of-frame segment.
pub(crate) fn jpeg_size(jpeg: &[u8]) -> Option<(u32, u32)> {
    if !jpeg.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut at = 2;
    while at + 9 <= jpeg.len() {
        if jpeg[at] != 0xFF {
            return None;
        }
        let marker = jpeg[at + 1];
        let length = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
        // SOF0..SOF15, less DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let height = u16::from_be_bytes([jpeg[at + 5], jpeg[at + 6]]);
            let width = u16::from_be_bytes([jpeg[at + 7], jpeg[at + 8]]);
            return Some((u32::from(width), u32::from(height)));
        }
        at += 2 + length;
    }
    None
}

/// A little-endian byte buffer of RIFF chunks.
struct Riff(Vec<u8>);

impl Riff {
    fn fourcc(&mut self, code: &[u8; 4]) {
        self.0.extend_from_slice(code);
    }

    fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn u16(&mut self, value: u16) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    /// Opens a list (or the RIFF itself): its code, a size filled in by [`Riff::close`],
    /// its type. Returns where the size goes.
    fn open(&mut self, code: &[u8; 4], kind: &[u8; 4]) -> usize {
        self.fourcc(code);
        let at = self.0.len();
        self.u32(0);
        self.fourcc(kind);
        at
    }

    /// Writes the size of the list opened at `at`: everything after the size field.
    fn close(&mut self, at: usize) {
        let size = u32::try_from(self.0.len() - at - 4).unwrap_or(u32::MAX);
        self.0[at..at + 4].copy_from_slice(&size.to_le_bytes());
    }

    /// One chunk, padded to an even length.
    fn chunk(&mut self, code: &[u8; 4], data: &[u8]) {
        self.fourcc(code);
        self.u32(u32::try_from(data.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(data);
        if data.len() % 2 == 1 {
            self.0.push(0);
        }
    }
}

/// The AVI of `frames` (JPEGs, in order) at `fps` frames a second, `width` x `height`.
pub(crate) fn write(frames: &[&[u8]], fps: f64, width: u32, height: u32) -> Vec<u8> {
    let total = u32::try_from(frames.len()).unwrap_or(u32::MAX);
    let largest = frames.iter().map(|f| f.len()).max().unwrap_or(0) as u32;
    let bytes: usize = frames.iter().map(|f| f.len() + PER_FRAME).sum();
    let mut riff = Riff(Vec::with_capacity(HEADERS + 8 + bytes));
    let file = riff.open(b"RIFF", b"AVI ");

    let hdrl = riff.open(b"LIST", b"hdrl");
    // avih: MainAVIHeader, 56 bytes.
    riff.fourcc(b"avih");
    riff.u32(56);
    riff.u32((1_000_000.0 / fps).round() as u32); // dwMicroSecPerFrame
    riff.u32(largest.saturating_mul(fps.ceil() as u32)); // dwMaxBytesPerSec
    riff.u32(0); // dwPaddingGranularity
    riff.u32(0x10); // dwFlags: AVIF_HASINDEX
    riff.u32(total); // dwTotalFrames
    riff.u32(0); // dwInitialFrames
    riff.u32(1); // dwStreams
    riff.u32(largest); // dwSuggestedBufferSize
    riff.u32(width); // dwWidth
    riff.u32(height); // dwHeight
    for _ in 0..4 {
        riff.u32(0); // dwReserved
    }

    let strl = riff.open(b"LIST", b"strl");
    // strh: AVIStreamHeader, 56 bytes. The rate is dwRate / dwScale frames a second.
    riff.fourcc(b"strh");
    riff.u32(56);
    riff.fourcc(b"vids"); // fccType
    riff.fourcc(b"MJPG"); // fccHandler
    riff.u32(0); // dwFlags
    riff.u16(0); // wPriority
    riff.u16(0); // wLanguage
    riff.u32(0); // dwInitialFrames
    riff.u32(1000); // dwScale
    riff.u32((fps * 1000.0).round() as u32); // dwRate
    riff.u32(0); // dwStart
    riff.u32(total); // dwLength, in frames
    riff.u32(largest); // dwSuggestedBufferSize
    riff.u32(u32::MAX); // dwQuality: the default
    riff.u32(0); // dwSampleSize: frames vary in size
    for edge in [0, 0, width, height] {
        riff.u16(u16::try_from(edge).unwrap_or(u16::MAX)); // rcFrame
    }
    // strf: BITMAPINFOHEADER, 40 bytes.
    riff.fourcc(b"strf");
    riff.u32(40);
    riff.u32(40); // biSize
    riff.u32(width); // biWidth
    riff.u32(height); // biHeight
    riff.u16(1); // biPlanes
    riff.u16(24); // biBitCount
    riff.fourcc(b"MJPG"); // biCompression
    riff.u32(width.saturating_mul(height).saturating_mul(3)); // biSizeImage
    for _ in 0..4 {
        riff.u32(0); // biXPelsPerMeter, biYPelsPerMeter, biClrUsed, biClrImportant
    }
    riff.close(strl);
    riff.close(hdrl);

    // movi: the frames. The index gives each chunk's offset from the 'movi' code.
    let movi = riff.open(b"LIST", b"movi");
    let mut index = Vec::with_capacity(frames.len());
    for frame in frames {
        index.push((riff.0.len() - (movi + 4), frame.len()));
        riff.chunk(b"00dc", frame);
    }
    riff.close(movi);

    riff.fourcc(b"idx1");
    riff.u32(total.saturating_mul(16));
    for (offset, size) in index {
        riff.fourcc(b"00dc");
        riff.u32(0x10); // AVIIF_KEYFRAME: every JPEG stands alone
        riff.u32(u32::try_from(offset).unwrap_or(u32::MAX));
        riff.u32(u32::try_from(size).unwrap_or(u32::MAX));
    }
    riff.close(file);
    riff.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JPEG as small as the writer cares about: SOI, an SOF0 of `w` x `h`, EOI.
    fn jpeg(w: u16, h: u16, pad: usize) -> Vec<u8> {
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 11, 8];
        j.extend(h.to_be_bytes());
        j.extend(w.to_be_bytes());
        j.extend([1, 1, 0x11, 0]);
        j.extend(std::iter::repeat_n(0, pad));
        j.extend([0xFF, 0xD9]);
        j
    }

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn the_video_file_is_riff_avi_with_one_jpeg_chunk_per_frame_and_an_index() {
        let (a, b) = (jpeg(320, 200, 3), jpeg(320, 200, 10));
        assert_eq!(jpeg_size(&a), Some((320, 200)));
        let avi = write(&[&a, &b, &a], 12.5, 320, 200);
        assert_eq!(&avi[..4], b"RIFF");
        assert_eq!(u32_at(&avi, 4) as usize, avi.len() - 8);
        assert_eq!(&avi[8..12], b"AVI ");
        assert_eq!(&avi[24..28], b"avih");
        assert_eq!(u32_at(&avi, 32), 80_000, "microseconds a frame");
        assert_eq!(u32_at(&avi, 48), 3, "total frames");
        assert_eq!((u32_at(&avi, 64), u32_at(&avi, 68)), (320, 200));
        let movi = avi.windows(4).position(|w| w == b"movi").unwrap();
        let mut at = movi + 4;
        let mut sizes = Vec::new();
        while &avi[at..at + 4] == b"00dc" {
            let size = u32_at(&avi, at + 4) as usize;
            assert_eq!(&avi[at + 8..at + 10], &[0xFF, 0xD8]);
            sizes.push(size);
            at += 8 + size + size % 2;
        }
        assert_eq!(sizes, [a.len(), b.len(), a.len()]);
        assert_eq!(&avi[at..at + 4], b"idx1");
        assert_eq!(u32_at(&avi, at + 4), 48);
        // The second entry points at the second chunk, from the 'movi' code.
        let second = movi + u32_at(&avi, at + 8 + 16 + 8) as usize;
        assert_eq!(&avi[second..second + 4], b"00dc");
        assert_eq!(u32_at(&avi, second + 4) as usize, b.len());
        assert_eq!(at + 8 + 48, avi.len());
        assert_eq!(HEADERS, movi + 4, "the header size the cap counts is the real one");
    }

    #[test]
    fn frames_are_repeated_and_dropped_to_the_rate_and_the_file_cap_cuts_the_end() {
        let frame = |at: f64| Frame {
            at,
            jpeg: jpeg(8, 8, 100),
        };
        // Drawn at 0.05, 0.10 and 0.52 s; at 10 fps over 1 s: ten frames.
        let frames = [frame(100.05), frame(100.10), frame(100.52)];
        let (placed, cut) = place(&frames, 100.0, 101.0, 10.0, usize::MAX);
        assert_eq!(placed, [0, 1, 1, 1, 1, 1, 2, 2, 2, 2]);
        assert!(!cut);
        // A file cap of the headers and four frames keeps four.
        let cap = HEADERS + 8 + 4 * (frames[0].jpeg.len() + PER_FRAME);
        let (placed, cut) = place(&frames, 100.0, 101.0, 10.0, cap);
        assert_eq!((placed.len(), cut), (4, true));
        assert_eq!(place(&[], 0.0, 1.0, 25.0, usize::MAX), (vec![], false));
    }
}
