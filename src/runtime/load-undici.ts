import { createRequire } from 'node:module';
import type * as UndiciModule from 'undici';

let undici: typeof UndiciModule | undefined;

/**
 * The undici package, loaded on first use. It is about a hundred CommonJS modules (~60 ms
 * at start), and a process that never sends a request upstream should not pay for them.
 */
export function loadUndici(): typeof UndiciModule {
  undici ??= createRequire(import.meta.url)('undici') as typeof UndiciModule;
  return undici;
}
