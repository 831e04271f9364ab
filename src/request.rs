//! Resolved requests: the plain values every command takes, made once from the parsed flags by
//! `cli` (as ripgrep turns its flags into high-level arguments). Each command's own request is
//! in its folder (`commands::<command>::Request`); commands never see the parser's structs.

use std::ops::Deref;

use crate::output::style::ColorChoice;
use crate::source::cluster::Connection;

/// What every command is given besides its own arguments.
#[derive(Clone, Debug)]
pub struct Global {
    /// How to reach the cluster(s), and the namespace asked for with `-n`.
    pub connection: Connection,
    pub color: ColorChoice,
    /// `-v` count (proxy-status reads one for its per-type columns).
    pub verbose: u8,
}

/// A request reads like its connection (`global.context`, `global.namespace`), and is passed
/// where a connection is wanted (`cluster::connect(global, ...)`).
impl Deref for Global {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.connection
    }
}
