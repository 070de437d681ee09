// The AI streaming scenario of the bench (bench/ai-stream.ts) must measure real streams: its
// driver against the local OpenAI-format provider, directly and through a gateway with
// ai-proxy (OpenAI and Anthropic clients), gets every token of every stream and reports a
// time to first token and the CPU per token (checked for what it reports, never for speed).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { aiStreamTableRows, drive, runAiStreamBench } from '../../bench/ai-stream.js';
import { startStreamServer } from '../../bench/llm-stream-server.js';

const children: ChildProcess[] = [];
const dir = mkdtempSync(join(tmpdir(), 'switchyard-ai-stream-bench-'));
// Should the file end without its after hook (a timeout), no process outlives it.
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));

after(() => {
  children.forEach((child) => child.kill('SIGTERM'));
  rmSync(dir, { recursive: true, force: true });
});

test('bench ai-stream driver: every token of each stream from the local provider, a TTFT per stream', async () => {
  const provider = await startStreamServer({ tokens: 8, intervalMs: 0 });
  try {
    const r = await drive({
      port: provider.port,
      path: '/v1/chat/completions',
      format: 'openai',
      streams: 2,
      seconds: 0.2,
      tokens: 8,
    });
    assert.ok(r.streams > 0, 'no stream completed');
    assert.equal(r.errors, 0);
    assert.equal(r.tokens, r.streams * 8);
    assert.equal(r.ttftMs.length, r.streams);
    assert.ok(r.ttftMs.every((t) => t >= 0));
  } finally {
    await provider.close();
  }
});

test('bench ai-stream: streams directly and through ai-proxy (relayed and translated), and prints a row each', async () => {
  const rows = await runAiStreamBench({
    seconds: 0.5,
    rounds: 1,
    streams: 2,
    tokens: 8,
    intervalMs: 0,
    targetCpu: null,
    dir,
    children,
  });
  assert.equal(rows.length, 3);
  for (const row of rows) {
    assert.ok(row.streams > 0, `${row.target}: no stream completed`);
    assert.equal(row.errors, 0, `${row.target}: streams failed or came back short`);
    assert.ok(row.ttftP99 >= row.ttftP50, `${row.target}: p99 below p50`);
    assert.ok(row.cpuUsPerToken === null || row.cpuUsPerToken > 0);
  }
  const table = aiStreamTableRows(rows);
  assert.equal(table[0]?.['× direct TTFT'], '1.00×');
  assert.equal(table[0]?.['TTFT added ms'], '0.00');
  assert.match(table[1]?.target ?? '', /OpenAI client/);
  assert.match(table[2]?.target ?? '', /Anthropic client/);
  assert.match(table[2]?.['CPU µs/token'] ?? '', /^\d+\.\d$|^—$/);
});
