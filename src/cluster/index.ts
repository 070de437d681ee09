export { ClusterPrimary, type ClusterPrimaryOptions } from './primary.js';
export { runClusterWorker } from './worker.js';
export { resolveWorkers, probeCpus, cgroupQuota, type CpuProbe } from './workers-count.js';
// Its own module, so the CLI asks which process it is without importing the primary and worker.
export { isClusterWorker } from './role.js';
