import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { LeanRequest } from './lean/lean-request.js';

/** HTTP/1.1 (node:http or the lean front) and HTTP/2 (compatibility API) requests go through one handler. */
export type ServerRequest = IncomingMessage | Http2ServerRequest | LeanRequest;
