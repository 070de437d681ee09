#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader: no build step between `npm ci` and `npm start`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
const code = await main(process.argv.slice(2));
// Let buffered log lines reach stdout before exiting.
setImmediate(() => process.exit(code));
