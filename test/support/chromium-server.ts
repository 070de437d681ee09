/**
 * One headless Chromium for a whole test run: scripts/run-tests.mjs starts this when a run holds
 * several browser test files, reads the WebSocket endpoint from its first line of output and hands
 * it to the files (SWITCHYARD_TEST_CHROMIUM_WS, read by launchChromium in ./chromium.ts). Exits,
 * closing Chromium, when its stdin ends or on SIGTERM. Prints nothing when there is no Chromium,
 * and the files then launch their own (or skip, see chromiumSkipReason).
 */
import { chromiumSkipReason, launchChromiumServer } from './chromium.js';

if (chromiumSkipReason() === false) {
  const server = await launchChromiumServer();
  process.stdout.write(`${server.wsEndpoint()}\n`);
  const stop = () => void server.close().finally(() => process.exit(0));
  process.stdin.on('end', stop);
  process.stdin.resume();
  process.once('SIGTERM', stop);
}
