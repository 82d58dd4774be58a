//! The error magnet-record's library API returns.

/// Why a recording (or `check`) could not be done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The host cannot load BPF programs: not root, or no kernel BTF. Says
    /// what is missing and what to do.
    #[error(transparent)]
    Host(#[from] magnet_host::HostError),
    /// The recording could not be set up or run: a bad target or filter, a
    /// hook a named layer needs, the verifier, the trace file. The message
    /// holds the whole chain of context, outermost first.
    #[error("{0}")]
    Record(String),
}

impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<magnet_host::HostError>() {
            Ok(h) => Error::Host(h),
            Err(e) => Error::Record(format!("{e:#}")),
        }
    }
}
