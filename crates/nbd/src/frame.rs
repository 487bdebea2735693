//! Reading length-delimited pieces of the stream, telling a clean end of stream apart from one
//! that stops in the middle of a message.

use std::io::{self, Read};

use crate::error::ConnError;

/// Fills `buf` completely. Returns `Ok(false)` if the stream ended before the first byte (a
/// clean end between messages) and an error if it ended after some bytes.
pub(crate) fn read_frame<R: Read>(
    reader: &mut R,
    buf: &mut [u8],
    what: &'static str,
) -> Result<bool, ConnError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => {
                return Err(ConnError::Truncated {
                    what,
                    got: filled as u64,
                    expected: buf.len() as u64,
                })
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ConnError::from_io(e, what)),
        }
    }
    Ok(true)
}

/// Reads exactly `length` bytes into a new buffer. The caller has already checked `length`
/// against a limit, so the allocation is bounded.
pub(crate) fn read_payload<R: Read>(
    reader: &mut R,
    length: u32,
    what: &'static str,
) -> Result<Vec<u8>, ConnError> {
    let expected = u64::from(length);
    let mut data = Vec::with_capacity(length as usize);
    reader
        .take(expected)
        .read_to_end(&mut data)
        .map_err(|e| ConnError::from_io(e, what))?;
    if data.len() as u64 != expected {
        return Err(ConnError::Truncated {
            what,
            got: data.len() as u64,
            expected,
        });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_end_and_truncation_are_told_apart() {
        let mut empty: &[u8] = &[];
        let mut buf = [0u8; 4];
        assert!(matches!(read_frame(&mut empty, &mut buf, "x"), Ok(false)));
        let mut short: &[u8] = &[1, 2];
        assert!(matches!(
            read_frame(&mut short, &mut buf, "x"),
            Err(ConnError::Truncated {
                got: 2,
                expected: 4,
                ..
            })
        ));
        let mut full: &[u8] = &[1, 2, 3, 4, 5];
        assert!(matches!(read_frame(&mut full, &mut buf, "x"), Ok(true)));
        assert_eq!(buf, [1, 2, 3, 4]);
        assert_eq!(full, &[5]);
    }

    #[test]
    fn payload_reads_are_exact() {
        let mut src: &[u8] = &[9, 8, 7, 6];
        assert_eq!(read_payload(&mut src, 3, "x").ok(), Some(vec![9, 8, 7]));
        assert!(matches!(
            read_payload(&mut src, 3, "x"),
            Err(ConnError::Truncated { got: 1, .. })
        ));
    }
}
