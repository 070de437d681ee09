import type { OutgoingHttpHeaders } from 'node:http2';
import type { Context } from '../../core/context.js';
import { encodeGrpcMessage } from '../../server/grpc-error.js';
import {
  answerContentType,
  carriedHeaders,
  decodeBase64Segments,
  grpcWebClientOf,
  isGrpcWebContentType,
  isGrpcWebText,
  trailerFrame,
} from '../../server/grpc-web.js';
import type { Reply } from '../../server/respond.js';
import { definePlugin } from '../../core/plugin.js';
import { attachNodeCall, splitFrames, statusOfReset, type AnswerSink } from './call-adapter.js';

/** Request headers of the browser's hop that mean nothing to the gRPC server. */
const DROPPED = ['x-grpc-web', 'content-length', 'accept'];

/** Upstream response headers the gRPC-Web answer sets itself. */
const OWN_RESPONSE = new Set([
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'trailer',
]);

/**
 * gRPC-Web (docs/plugins/grpc-web.md): a browser's `application/grpc-web(+proto)`
 * or `application/grpc-web-text(+proto)` call becomes a gRPC call that the next
 * `upstream` node (`scheme: grpc | grpcs`) relays; its answer streams back as
 * gRPC-Web: messages in the body as they arrive, the trailers as a final
 * trailer frame (flag 0x80), all base64 for `-text`.
 */
export const grpcWeb = definePlugin({
  type: 'grpc-web',
  category: 'grpc',
  description:
    'Turn a gRPC-Web call (application/grpc-web, -text base64) from HTTP/1.1 or HTTP/2 into gRPC for the next upstream (scheme grpc/grpcs) and stream its answer back as gRPC-Web, trailers in the body.',
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {},
  },
  outputs: {
    success: {
      kind: 'success',
      description:
        'The call is ready for an upstream with scheme grpc or grpcs; its answer streams back as gRPC-Web.',
    },
    rejected: {
      kind: 'outcome',
      description:
        'Not a gRPC-Web call (method other than POST, another content type, a body that is not whole gRPC frames): a prepared 400/405/415; wire to client.',
    },
  },
  readsResponseBody: () => false,
  create(_config: Record<string, never>) {
    return {
      run(ctx) {
        const req = ctx.request;
        const client = grpcWebClientOf(ctx);
        const type = req.header('content-type') ?? '';
        if (!isGrpcWebContentType(type) || client === undefined)
          return reject(ctx, 415, `grpc-web expects content-type application/grpc-web…, got '${type}'`);
        if (req.method !== 'POST') return reject(ctx, 405, `grpc-web calls are POST, got ${req.method}`);
        const text = isGrpcWebText(type);
        const raw = req.body ?? Buffer.alloc(0);
        const body = text ? decodeBase64Segments(raw.toString('latin1')) : raw;
        const frames = splitFrames(body);
        if (typeof frames === 'string') return reject(ctx, 400, `malformed gRPC-Web body: ${frames}`);
        // The gRPC request: same path and metadata, the gRPC content type with the same subtype.
        const plus = type.indexOf('+');
        const semi = type.indexOf(';');
        const subtype = plus === -1 ? '' : type.slice(plus, semi === -1 ? undefined : semi).trim();
        req.headers['content-type'] = `application/grpc${subtype}`;
        for (const name of DROPPED) delete req.headers[name];
        req.body = null;
        const reply = client.reply;
        const call = attachNodeCall(ctx, body, webSink(ctx, reply, answerContentType(type), text));
        // The browser went away before the answer ended (the server's signal reads an HTTP/2
        // stream's own state; a reset stream's writableFinished is true): cancel the upstream call.
        if (ctx.clientGone.aborted) call.abort();
        else ctx.clientGone.addEventListener('abort', { handleEvent: () => call.abort() });
        return 'success';
      },
    };
  },
});

function reject(ctx: Context, status: number, message: string): 'rejected' {
  ctx.response.status = status;
  ctx.response.setBody(JSON.stringify({ error: 'bad_request', message }), 'application/json');
  return 'rejected';
}

/** Writes the upstream's answer into the client's reply as gRPC-Web, with backpressure. */
function webSink(ctx: Context, reply: Reply, contentType: string, text: boolean): AnswerSink {
  let waiting: (() => void) | null = null;
  reply.on('drain', () => {
    const next = waiting;
    waiting = null;
    next?.();
  });
  const encode = (chunk: Buffer): Buffer => (text ? Buffer.from(chunk.toString('base64'), 'latin1') : chunk);
  return {
    headers(headers, trailersOnly) {
      const out: Record<string, string | string[]> = carriedHeaders(ctx.response.headers);
      for (const name in headers) {
        const value = headers[name];
        if (value === undefined || name.charCodeAt(0) === 58 || OWN_RESPONSE.has(name)) continue;
        out[name] = Array.isArray(value) ? value.map(String) : String(value);
      }
      out['content-type'] = contentType;
      const status = Number(headers[':status'] ?? 200);
      // Trailers-only: grpc-status and grpc-message stay in the headers, the body is empty (as the gRPC-Web protocol allows).
      if (trailersOnly) out['content-length'] = '0';
      try {
        reply.writeHead(status, out);
      } catch {
        reply.destroy();
        return;
      }
      if (trailersOnly) reply.end();
    },
    data(chunk, next) {
      if (reply.write(encode(chunk))) next();
      else waiting = () => next();
    },
    end(trailers, reset) {
      const block: OutgoingHttpHeaders =
        reset === undefined
          ? (trailers ?? {})
          : {
              'grpc-status': String(statusOfReset(reset)),
              'grpc-message': encodeGrpcMessage(`upstream reset the call (HTTP/2 code ${reset})`),
            };
      reply.end(encode(trailerFrame(block)));
    },
  };
}
