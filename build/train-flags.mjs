// V8 flags of every build step that runs the embedded Node to make V8 data (code caches, the SEA blob).
// --random-seed: V8 seeds its RNG per isolate, and the seed leaks into the code caches it serialises; with a fixed
// seed the CNI path's cache (train-main-cache.mjs) is the same bytes on every build. It is not in V8's flag hash, so
// the executable (no flags) still accepts the caches. The Kubernetes client's cache still varies with the machine's
// load (measured, cause not found), so two builds of one commit can differ in k8s-client.cache.
export const embeddedFlags = ['--random-seed=1'];
