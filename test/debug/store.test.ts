import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TraceStore } from '../../src/debug/store.js';
import type { Trace } from '../../src/debug/trace-types.js';
import type { ContextSnapshot } from '../../src/debug/snapshot.js';

const empty: ContextSnapshot = {
  request: {
    method: 'GET',
    path: '/',
    host: 'h',
    scheme: 'http',
    protocol: 'http1',
    remote_addr: '127.0.0.1:0',
    headers: {},
    query_params: {},
    body: { len: 0 },
  },
  response: { status_code: 200, headers: {}, body: { len: 0 } },
  message: {},
  errors: [],
};

function trace(store: TraceStore, id: string, over: Partial<Trace> = {}): Trace {
  return {
    id,
    seq: store.nextSeq(),
    source: 'request',
    started_ms: 0,
    route: 'r',
    policy: 'p',
    method: 'GET',
    path: '/',
    status: 200,
    duration_us: 1,
    captured_bodies: false,
    response_origin: null,
    notes: [],
    initial: empty,
    steps: [],
    ...over,
  };
}

test('ring buffer: the oldest traces are evicted past max_traces; newest first', () => {
  const store = new TraceStore(3);
  for (let i = 0; i < 8; i++) store.add(trace(store, `t${i}`));
  assert.equal(store.size, 3);
  assert.equal(store.get('t0'), undefined);
  assert.equal(store.get('t4'), undefined);
  assert.equal(store.get('t7')?.id, 't7');
  const { traces, retention } = store.list();
  assert.deepEqual(
    traces.map((t) => t.id),
    ['t7', 't6', 't5'],
  );
  assert.deepEqual(retention, { max_traces: 3, retained: 3, evicted: 5, oldest_seq: 6, truncated: false });
});

test('ring buffer: clear empties it and counts what it removed; eviction resumes cleanly', () => {
  const store = new TraceStore(2);
  store.add(trace(store, 'a'));
  store.add(trace(store, 'b'));
  assert.equal(store.clear(), 2);
  assert.equal(store.get('a'), undefined);
  assert.deepEqual(store.list().traces, []);
  assert.equal(store.list().retention.oldest_seq, null);
  for (const id of ['c', 'd', 'e']) store.add(trace(store, id));
  assert.deepEqual(
    store.list().traces.map((t) => t.id),
    ['e', 'd'],
  );
});

test('ring buffer: max_traces 0 stores nothing', () => {
  const store = new TraceStore(0);
  store.add(trace(store, 'a'));
  assert.equal(store.size, 0);
  assert.equal(store.get('a'), undefined);
  assert.deepEqual(store.list().retention, {
    max_traces: 0,
    retained: 0,
    evicted: 0,
    oldest_seq: null,
    truncated: false,
  });
});

test('listing: filters are ANDed and limit applies last, flagging truncation', () => {
  const store = new TraceStore(10);
  store.add(trace(store, 'a', { policy: 'p1', status: 200 }));
  store.add(trace(store, 'b', { policy: 'p1', status: 500 }));
  store.add(trace(store, 'c', { policy: 'p2', status: 200, source: 'sandbox' }));
  store.add(trace(store, 'd', { policy: 'p1', status: 200, route: 'other' }));
  const ids = (f: Parameters<TraceStore['list']>[0]) => store.list(f).traces.map((t) => t.id);
  assert.deepEqual(ids({ policy: 'p1', status: 200 }), ['d', 'a']);
  assert.deepEqual(ids({ source: 'sandbox' }), ['c']);
  assert.deepEqual(ids({ route: 'r' }), ['c', 'b', 'a']);
  const limited = store.list({ policy: 'p1', limit: 2 });
  assert.deepEqual(
    limited.traces.map((t) => t.id),
    ['d', 'b'],
  );
  assert.equal(limited.retention.truncated, true);
  assert.equal(store.list({ policy: 'p1', limit: 3 }).retention.truncated, false);
});
