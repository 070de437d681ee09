import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { Context } from '../../src/core/context.js';
import {
  attachRequestStream,
  requestStreamOf,
  RequestBodyStream,
} from '../../src/outbound/request-stream.js';
import {
  attachUpgrade,
  clearRelayed,
  isRelayed,
  markRelayed,
  upgradeOf,
} from '../../src/outbound/websocket-relay.js';

/**
 * Issue 37: what a node takes over from the client travels on one typed field,
 * `Context.transport` (src/core/transport.ts), not in module-level tables; the
 * data plane is made of named functions short enough to read.
 */

const root = join(import.meta.dirname, '../..');

const plain = () =>
  new Context({
    method: 'GET',
    url: '/',
    host: 'h',
    scheme: 'http',
    protocol: 'http1',
    headers: {},
    remoteAddress: '127.0.0.1',
    remotePort: 1,
  });

test('a plain request carries no transport; attaching fills one object the relays read back', () => {
  const ctx = plain();
  assert.equal(ctx.transport, undefined);
  assert.equal(isRelayed(ctx), false);
  const stream = new RequestBodyStream({ resumeBody() {}, bodyDestroyed() {} }, 3);
  attachRequestStream(ctx, stream);
  const socket = new PassThrough();
  attachUpgrade(ctx, { kind: 'http1', socket, head: Buffer.alloc(0) });
  const transport = ctx.transport;
  assert.ok(transport !== undefined);
  assert.equal(requestStreamOf(ctx), stream);
  assert.equal(upgradeOf(ctx)?.kind, 'http1');
  markRelayed(ctx);
  assert.equal(isRelayed(ctx), true);
  clearRelayed(ctx);
  assert.equal(isRelayed(ctx), false);
  assert.equal(ctx.transport, transport, 'one transport per context');
  assert.equal(requestStreamOf(plain()), undefined, 'nothing leaks to another context');
  stream.destroy();
});

function tsFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

test('src/server and src/outbound keep no WeakMap or WeakSet keyed by Context', () => {
  const found = [...tsFiles('src/server'), ...tsFiles('src/outbound')].filter((f) =>
    /new Weak(?:Map|Set)<Context\b/.test(readFileSync(join(root, f), 'utf8')),
  );
  assert.deepEqual(found, []);
});

test('every top-level function of src/server/data-plane.ts is at most 80 lines', () => {
  const lines = readFileSync(join(root, 'src/server/data-plane.ts'), 'utf8').split('\n');
  const long: string[] = [];
  let start = -1;
  let name = '';
  lines.forEach((line, i) => {
    const head = /^(?:export )?function (\w+)/.exec(line);
    if (head !== null) {
      start = i;
      name = head[1]!;
    } else if (start !== -1 && line === '}') {
      if (i - start + 1 > 80) long.push(`${name}: ${i - start + 1} lines`);
      start = -1;
    }
  });
  assert.ok(lines.some((l) => l.startsWith('export function createDataPlaneHandler(')));
  assert.deepEqual(long, []);
});
