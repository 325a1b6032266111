//! Frames: a 4-byte big-endian length, then a kind byte and a body.

use std::io;

use tokio::io::{AsyncBufRead, AsyncRead, AsyncReadExt};

/// One frame: a 4-byte length, the kind byte, the body.
pub(crate) fn frame(kind: u8, body: &[u8]) -> io::Result<Vec<u8>> {
    let len = u32::try_from(body.len() + 1).map_err(|_| io::Error::other("frame too large"))?;
    let mut frame = Vec::with_capacity(4 + 1 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.push(kind);
    frame.extend_from_slice(body);
    Ok(frame)
}

/// Reads one frame of at most `max` bytes. `Ok(None)`: the peer closed the
/// connection between frames.
pub(crate) async fn read_frame(r: &mut (impl AsyncBufRead + Unpin), max: usize) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "empty frame"));
    }
    if len > max.saturating_add(1) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes, over the limit of {max}"),
        ));
    }
    let mut kind = [0u8; 1];
    r.read_exact(&mut kind).await?;
    // Grows as the bytes arrive: a length alone does not allocate.
    let mut body = Vec::new();
    let got = r.take((len - 1) as u64).read_to_end(&mut body).await?;
    if got != len - 1 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed inside a frame",
        ));
    }
    Ok(Some((kind[0], body)))
}

/// Fills `buf`; `Ok(false)` if the connection closed first.
pub(super) async fn read_all_or_eof(r: &mut (impl AsyncRead + Unpin), buf: &mut [u8]) -> io::Result<bool> {
    match r.read_exact(buf).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}
