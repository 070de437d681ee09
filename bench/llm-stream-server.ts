/**
 * The local LLM provider of the bench's AI streaming scenario
 * (bench/ai-stream.ts): an OpenAI-format Chat Completions server on
 * node:http. POST /v1/chat/completions with `stream: true` answers
 * `text/event-stream` as OpenAI documents it: one `chat.completion.chunk`
 * with the assistant role, then AI_TOKENS (64) chunks of one content token
 * each, one write per token, AI_TOKEN_INTERVAL_MS (1) apart (0: back to back,
 * one event-loop turn apart), a finish chunk, a usage chunk when the request
 * asked for `stream_options.include_usage`, and `data: [DONE]`. The first
 * token is written as soon as the request body has arrived. A request without
 * `stream` gets the whole answer as one JSON body. Prints "listening <port>".
 */
import { createServer, type ServerResponse } from 'node:http';

export interface StreamServerOptions {
  tokens: number;
  intervalMs: number;
}

const chunk = (id: string, model: string, delta: object, finish: string | null) =>
  `data: ${JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created: 1,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })}\n\n`;

function stream(res: ServerResponse, model: string, usage: boolean, o: StreamServerOptions, n: number): void {
  const id = `chatcmpl-bench-${n}`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk(id, model, { role: 'assistant', content: '' }, null));
  let sent = 0;
  const next = () => {
    if (res.destroyed) return;
    if (sent < o.tokens) {
      res.write(chunk(id, model, { content: sent === 0 ? 'tok' : ' tok' }, null));
      sent++;
      if (o.intervalMs > 0) setTimeout(next, o.intervalMs);
      else setImmediate(next);
      return;
    }
    let tail = chunk(id, model, {}, 'stop');
    if (usage)
      tail += `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: 1,
        model,
        choices: [],
        usage: { prompt_tokens: 12, completion_tokens: o.tokens, total_tokens: 12 + o.tokens },
      })}\n\n`;
    res.end(`${tail}data: [DONE]\n\n`);
  };
  next();
}

/** Starts the provider on a loopback port; resolves to the port and a close function. */
export function startStreamServer(
  o: StreamServerOptions,
  port = 0,
): Promise<{ port: number; close: () => Promise<void> }> {
  let calls = 0;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      let body: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } } = {};
      try {
        body = JSON.parse(Buffer.concat(parts).toString()) as typeof body;
      } catch {
        // answered below as a bad request
      }
      if (
        req.method !== 'POST' ||
        !(req.url ?? '').endsWith('/chat/completions') ||
        body.model === undefined
      ) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          '{"error":{"message":"bad request","type":"invalid_request_error","param":null,"code":null}}',
        );
        return;
      }
      calls++;
      if (body.stream === true) {
        stream(res, body.model, body.stream_options?.include_usage === true, o, calls);
        return;
      }
      const text = Array.from({ length: o.tokens }, () => 'tok').join(' ');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-bench-${calls}`,
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 12, completion_tokens: o.tokens, total_tokens: 12 + o.tokens },
        }),
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : 0,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

if (process.argv[1]?.endsWith('llm-stream-server.ts') === true) {
  const started = await startStreamServer({
    tokens: Number(process.env.AI_TOKENS ?? 64),
    intervalMs: Number(process.env.AI_TOKEN_INTERVAL_MS ?? 1),
  });
  console.log(`llm provider listening ${started.port}`);
}
