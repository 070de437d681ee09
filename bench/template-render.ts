/**
 * Cost of rendering a parsed 3-reference template, the per-request work of a
 * templated field. Run: node --import tsx bench/template-render.ts
 */
import { Context } from '../src/core/context.js';
import { compileTemplate } from '../src/template/index.js';

const ctx = new Context(
  {
    method: 'GET',
    url: '/orders/42?page=2',
    host: 'api.example.com',
    scheme: 'https',
    protocol: 'http1',
    headers: { 'x-api-key': 'k-123', accept: 'application/json' },
    remoteAddress: '203.0.113.7',
    remotePort: 51234,
  },
  new AbortController().signal,
);
ctx.message = { 'consumer.name': 'ada' };

const template = compileTemplate(
  'tenant={{ message.consumer.name }};key={{request.headers.X-Api-Key}};m={{request.method}}',
);
const expected = 'tenant=ada;key=k-123;m=GET';
if (template.render(ctx) !== expected) throw new Error(`unexpected render: ${template.render(ctx)}`);

function run(iterations: number): number {
  let length = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) length += template.render(ctx).length;
  const elapsed = Number(process.hrtime.bigint() - start);
  // Using the result keeps the loop from being optimised away.
  if (length !== iterations * expected.length) throw new Error('render result changed');
  return elapsed / iterations;
}

run(200_000); // warm-up: let the JIT settle
const samples = [run(2_000_000), run(2_000_000), run(2_000_000)].sort((a, b) => a - b);
const median = samples[1] ?? Number.NaN;
console.log(`template render (3 references): ${median.toFixed(1)} ns/render (median of 3 × 2,000,000)`);
if (median >= 1000) {
  console.error('over budget: a render must cost under 1 µs');
  process.exitCode = 1;
}
