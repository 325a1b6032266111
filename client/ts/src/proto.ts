/** The generated wire types and service definitions of handlestore.v1, for tools that talk to the services directly. */
export * from "./gen/handlestore/v1/admin.js";
export * from "./gen/handlestore/v1/auth.js";
export * from "./gen/handlestore/v1/common.js";
export * from "./gen/handlestore/v1/handles.js";
export * from "./gen/handlestore/v1/reads.js";
export * from "./gen/handlestore/v1/state.js";
export * from "./gen/handlestore/v1/watch.js";
export * from "./gen/handlestore/v1/writes.js";
