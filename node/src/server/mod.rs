//! One node assembled and served: its ports and what each serves, the
//! middleware every call passes (admission, call accounting, the leader
//! header), the health endpoints, and the readings a scrape or a status
//! gathers from the parts. The top of the node: it may use every layer
//! below it; none of them uses it (only `cli` does).

pub mod admission;
pub mod calls;
pub mod health;
pub mod leader_header;
pub mod memory;
pub mod node;
pub mod ports;
pub mod readings;
