//! Where snapshots come from: files, or a live cluster; one pod and its surroundings.
//!
//! `cluster` is the client (connection, requests, pagination, errors); the readers (`live` for
//! a snapshot, `pod` for one pod and its surroundings) read through it and import nothing back
//! into it.

pub mod cluster;
pub mod dns;
pub mod files;
pub mod live;
pub mod pod;
