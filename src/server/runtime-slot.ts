import type { Runtime } from '../engine/compile.js';

/**
 * A runtime plus the count of requests still using it. Requests finish on the
 * runtime they started on; a retired runtime is closed when its last request ends.
 */
export class RuntimeSlot {
  inflight = 0;
  #retired = false;

  constructor(readonly runtime: Runtime) {}

  acquire(): void {
    this.inflight++;
  }

  release(): void {
    this.inflight--;
    if (this.inflight === 0 && this.#retired) void this.runtime.close();
  }

  retire(): void {
    this.#retired = true;
    if (this.inflight === 0) void this.runtime.close();
  }
}
