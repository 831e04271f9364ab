//! The cluster client: the connection ([`connection`]), requests and pagination ([`requests`]),
//! what a failed request means ([`errors`]). It imports none of the readers above it
//! (`source::live`, `source::pod`).

pub mod connection;
pub mod errors;
mod multiplexed;
pub mod requests;
mod retry_after;

pub use connection::{
    Cluster, Connection, connect, kubeconfig_contexts, kubeconfig_paths, load_kubeconfig,
    scope_namespace,
};
pub use errors::{ListError, classify, flatten};
pub use requests::{DEFAULT_CHUNK_SIZE, MAX_PAGES, TRIES, in_place, mapped};
