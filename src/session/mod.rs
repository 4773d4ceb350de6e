//! The session: its data model, the store on disk, the lock, and the changes commands make.

pub mod bound;
pub mod exact;
pub mod lock;
pub mod merge;
pub mod model;
pub mod ops;
pub mod store;
pub mod teams;

pub use model::Session;
pub use store::Project;
