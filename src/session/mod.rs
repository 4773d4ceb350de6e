//! The session: its data model, the store on disk, the lock, and the changes commands make.

pub mod exact;
pub mod lock;
pub mod model;
pub mod ops;
pub mod store;

pub use model::Session;
pub use store::Project;
