// The gRPC scenario of the bench (bench/grpc.ts) must measure real calls: its load script
// against its origin, directly and through a gateway with `scheme: grpc`, completes calls
// without errors and reports them (checked for what it reports, never for speed).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { grpcTableRows, runGrpcBench } from '../../bench/grpc.js';

const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'switchyard-grpc-bench-'));
// Should the file end without its after hook (a timeout), no process outlives it.
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));

after(() => {
  children.forEach((child) => child.kill('SIGTERM'));
  rmSync(dir, { recursive: true, force: true });
});

test('bench grpc-unary: calls the origin directly and through the gateway, and reports both', async () => {
  const rows = await runGrpcBench({ seconds: 1, rounds: 1, concurrency: 4, targetCpu: null, dir, children });
  assert.equal(rows.length, 2);
  for (const row of rows) {
    assert.ok(row.rps > 0, `${row.target}: no call completed`);
    assert.equal(row.errors, 0, `${row.target}: calls failed`);
    assert.ok(row.p99 >= row.p50, `${row.target}: p99 below p50`);
    assert.ok(row.cpuUs === null || row.cpuUs > 0);
  }
  const table = grpcTableRows(rows);
  assert.equal(table[0]?.['× direct'], '1.00×');
  assert.match(table[1]?.target ?? '', /scheme: grpc/);
});
