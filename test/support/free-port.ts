import { createServer } from 'node:net';

// Below the kernel's ephemeral range (32768–60999 by default), so no outgoing connection of this or
// another test can be given the port between the check here and the child process binding it.
const LOW = 20000;
const HIGH = 32000;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port that was free a moment ago on 127.0.0.1 (for child processes that need a fixed port). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port found between ${LOW} and ${HIGH}`);
}
