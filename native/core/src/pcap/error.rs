//! What goes wrong reading a capture, and the errors that name where in the file.

use super::*;

/// What went wrong reading a capture.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// The bytes are not a (readable) capture; `offset` is where the problem is.
    Invalid { message: String, offset: u64 },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::Invalid { message, offset } => {
                write!(f, "{message} (at byte offset {offset})")
            }
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            ReadError::Invalid { .. } => None,
        }
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

pub(super) fn invalid(message: impl Into<String>, offset: usize) -> ReadError {
    ReadError::Invalid {
        message: message.into(),
        offset: offset as u64,
    }
}

pub(super) fn unsupported_link(link_type: u32, offset: usize) -> ReadError {
    let message = match linktype_name(link_type) {
        Some(name) => format!("unsupported link type {link_type} ({name})"),
        None => format!("unsupported link type {link_type}"),
    };
    invalid(message, offset)
}
