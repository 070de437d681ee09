import { isAbsolute, resolve } from 'node:path';
import protobuf from 'protobufjs';
import type { Context } from '../../core/context.js';
import { clearRelayed } from '../../outbound/websocket-relay.js';
import { ConfigError, definePlugin, READS_FILE } from '../../core/plugin.js';
import { attachNodeCall, messageFrame, splitFrames, statusOfReset, type AnswerSink } from './call-adapter.js';

interface GrpcTranscodeConfig {
  proto?: string;
  proto_file?: string;
  service: string;
  method: string;
  query_params: boolean;
  max_response_bytes: number;
}

/** gRPC status names, by code (grpc/doc/statuscodes.md). */
export const GRPC_CODE_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** The HTTP status of a gRPC status (docs/plugins/grpc-transcode.md, "Errors"); anything else is 500. */
const HTTP_OF_GRPC: Readonly<Record<number, number>> = {
  0: 200,
  1: 499,
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  11: 400,
  12: 501,
  14: 503,
  16: 401,
};

export function httpStatusOfGrpc(code: number): number {
  return HTTP_OF_GRPC[code] ?? 500;
}

/** How answers are turned into JSON: enums by name, 64-bit integers as strings, bytes as base64, defaults present. */
const TO_JSON: protobuf.IConversionOptions = {
  enums: String,
  longs: String,
  bytes: String,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
  json: true,
};

/**
 * grpc-transcode (docs/plugins/grpc-transcode.md): a JSON/HTTP request becomes
 * a protobuf gRPC call of the configured `service`/`method`, which the next
 * `upstream` node (`scheme: grpc | grpcs`) relays; the answer comes back as
 * JSON, a gRPC error as an HTTP status with the grpc-message in the JSON.
 */
export const grpcTranscode = definePlugin({
  type: 'grpc-transcode',
  category: 'grpc',
  description:
    'Call a gRPC method with a JSON/HTTP request: the body (and optionally query parameters) encoded as protobuf from a .proto, the answer decoded back to JSON, gRPC errors mapped to HTTP statuses.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['service', 'method'],
    properties: {
      proto: {
        type: 'string',
        minLength: 1,
        description: 'The .proto source inline (set proto or proto_file).',
      },
      proto_file: {
        type: 'string',
        minLength: 1,
        [READS_FILE]: true,
        description:
          'Path of a .proto file, relative to the directory of gateway.yaml; its imports are resolved next to it.',
      },
      service: {
        type: 'string',
        minLength: 1,
        description: 'The service, fully qualified with its package (e.g. helloworld.Greeter).',
      },
      method: {
        type: 'string',
        minLength: 1,
        description: 'A unary or server-streaming method of the service (e.g. SayHello).',
      },
      query_params: {
        type: 'boolean',
        default: false,
        description:
          'Also fill top-level fields of the request message from query parameters (the JSON body wins for a field in both).',
      },
      max_response_bytes: {
        type: 'integer',
        minimum: 1,
        default: 4194304,
        description:
          'Largest gRPC answer (all messages) decoded to JSON; a larger one is a 502. Default 4 MiB.',
      },
    },
  },
  outputs: {
    success: {
      kind: 'success',
      description:
        'The gRPC request is built; wire to an upstream with scheme grpc or grpcs, whose success port then carries the JSON answer (or the mapped error status).',
    },
    invalid: {
      kind: 'outcome',
      description:
        'The body is not a JSON object or does not fit the request message: a prepared 400; wire to client.',
    },
  },
  readsResponseBody: () => false,
  create(config: GrpcTranscodeConfig, env) {
    const root = loadProto(config, env.configDir);
    let service: protobuf.Service;
    try {
      service = root.lookupService(config.service);
    } catch {
      throw new ConfigError('service', `no service '${config.service}' in the proto (${serviceNames(root)})`);
    }
    const method = service.methods[config.method];
    if (method === undefined) {
      throw new ConfigError(
        'method',
        `service '${config.service}' has no method '${config.method}' (it has ${Object.keys(service.methods).join(', ') || 'none'})`,
      );
    }
    if (method.requestStream === true) {
      throw new ConfigError(
        'method',
        `'${config.method}' is client-streaming; grpc-transcode calls unary and server-streaming methods`,
      );
    }
    method.resolve();
    const requestType = method.resolvedRequestType;
    const responseType = method.resolvedResponseType;
    if (requestType === null || responseType === null) {
      throw new ConfigError('method', `the message types of '${config.method}' do not resolve`);
    }
    const path = `/${service.fullName.replace(/^\./, '')}/${method.name}`;
    const streaming = method.responseStream === true;
    const fields = requestType.fieldsArray;
    const maxBytes = config.max_response_bytes;
    const requestName = requestType.fullName.replace(/^\./, '');

    return {
      run(ctx) {
        const req = ctx.request;
        let input: Record<string, unknown>;
        try {
          input = parseInput(req.body);
          if (config.query_params) {
            for (const field of fields) {
              if (Object.hasOwn(input, field.name)) continue;
              const values = req.query.get(field.name);
              if (values === undefined || values.length === 0) continue;
              input[field.name] = field.repeated
                ? values.map((v) => scalar(field, v))
                : scalar(field, values[0]!);
            }
          }
        } catch (err) {
          return invalid(ctx, (err as Error).message);
        }
        const problem = misfit(requestType, input, '');
        if (problem !== undefined) return invalid(ctx, `the body does not fit ${requestName}: ${problem}`);
        let frame: Buffer;
        try {
          frame = messageFrame(requestType.encode(requestType.fromObject(input)).finish());
        } catch (err) {
          return invalid(
            ctx,
            `the body does not fit ${requestType.fullName.replace(/^\./, '')}: ${(err as Error).message}`,
          );
        }
        req.method = 'POST';
        req.path = path;
        req.rawQuery = '';
        req.headers['content-type'] = 'application/grpc';
        delete req.headers['content-length'];
        delete req.headers.accept;
        req.body = null;
        attachNodeCall(ctx, frame, jsonSink(ctx, responseType, streaming, maxBytes));
        return 'success';
      },
    };
  },
});

function loadProto(config: GrpcTranscodeConfig, configDir: string | undefined): protobuf.Root {
  if ((config.proto === undefined) === (config.proto_file === undefined)) {
    throw new ConfigError('proto', 'set exactly one of proto (inline) and proto_file');
  }
  if (config.proto !== undefined) {
    try {
      const root = protobuf.parse(config.proto, new protobuf.Root(), { keepCase: true }).root;
      root.resolveAll();
      return root;
    } catch (err) {
      throw new ConfigError('proto', `does not parse: ${(err as Error).message}`);
    }
  }
  const file = config.proto_file as string;
  const full = isAbsolute(file) || configDir === undefined ? file : resolve(configDir, file);
  try {
    const root = new protobuf.Root();
    root.loadSync(full, { keepCase: true });
    root.resolveAll();
    return root;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      'proto_file',
      e.code === 'ENOENT' ? `cannot read '${full}': ENOENT` : `'${full}' does not parse: ${e.message}`,
    );
  }
}

function serviceNames(root: protobuf.Root): string {
  const names: string[] = [];
  const walk = (ns: protobuf.NamespaceBase) => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Service) names.push(nested.fullName.replace(/^\./, ''));
      else if (nested instanceof protobuf.Namespace) walk(nested);
    }
  };
  walk(root);
  return names.length === 0 ? 'it has none' : `it has ${names.join(', ')}`;
}

function parseInput(body: Buffer | null): Record<string, unknown> {
  if (body === null || body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('the body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('the body is not a JSON object');
  return parsed as Record<string, unknown>;
}

/** A query parameter as the field's JSON value: numbers and booleans from their text. */
function scalar(field: protobuf.Field, text: string): unknown {
  switch (field.type) {
    case 'double':
    case 'float':
    case 'int32':
    case 'uint32':
    case 'sint32':
    case 'fixed32':
    case 'sfixed32': {
      const n = Number(text);
      if (text.trim() === '' || Number.isNaN(n))
        throw new Error(`query parameter '${field.name}' is not a number`);
      return n;
    }
    case 'bool':
      if (text !== 'true' && text !== 'false')
        throw new Error(`query parameter '${field.name}' is not true or false`);
      return text === 'true';
    default:
      return text;
  }
}

const INTEGER = /^-?\d+$/;

/**
 * Why a JSON value does not fit a message (undefined when it does), checked
 * before protobufjs's lenient conversion: a string field takes a string, a
 * number field a number or its decimal text (64-bit integers usually come as
 * text), a message field an object, a repeated field an array. Unknown fields
 * are ignored.
 */
function misfit(type: protobuf.Type, value: unknown, at: string): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `${at || 'the body'} is not an object`;
  for (const [key, item] of Object.entries(value)) {
    const field = type.fields[key];
    if (field === undefined || item === null) continue;
    const path = at === '' ? key : `${at}.${key}`;
    if (field.map) {
      if (typeof item !== 'object' || Array.isArray(item)) return `${path} is not an object`;
      for (const [k, v] of Object.entries(item as object)) {
        const problem = misfitValue(field, v, `${path}.${k}`);
        if (problem !== undefined) return problem;
      }
    } else if (field.repeated) {
      if (!Array.isArray(item)) return `${path} is not an array`;
      for (let i = 0; i < item.length; i++) {
        const problem = misfitValue(field, item[i], `${path}[${i}]`);
        if (problem !== undefined) return problem;
      }
    } else {
      const problem = misfitValue(field, item, path);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

function misfitValue(field: protobuf.Field, value: unknown, path: string): string | undefined {
  const resolved = field.resolve().resolvedType;
  if (resolved instanceof protobuf.Type) return misfit(resolved, value, path);
  if (resolved instanceof protobuf.Enum) {
    if (typeof value === 'string' && value in resolved.values) return undefined;
    if (typeof value === 'number' && Number.isInteger(value)) return undefined;
    return `${path} is not a value of ${resolved.name}`;
  }
  switch (field.type) {
    case 'string':
    case 'bytes':
      return typeof value === 'string' ? undefined : `${path} is not a string`;
    case 'bool':
      return typeof value === 'boolean' ? undefined : `${path} is not true or false`;
    case 'double':
    case 'float':
      return typeof value === 'number' ||
        (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value)))
        ? undefined
        : `${path} is not a number`;
    default:
      return (typeof value === 'number' && Number.isInteger(value)) ||
        (typeof value === 'string' && INTEGER.test(value))
        ? undefined
        : `${path} is not an integer`;
  }
}

function invalid(ctx: Context, message: string): 'invalid' {
  ctx.response.status = 400;
  ctx.response.setBody(JSON.stringify({ error: 'bad_request', message }), 'application/json');
  return 'invalid';
}

/** Collects the answer (bounded), then puts its JSON (or the mapped error) in `ctx.response` for the graph. */
function jsonSink(ctx: Context, type: protobuf.Type, streaming: boolean, maxBytes: number): AnswerSink {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let headerStatus: string | undefined;
  let headerMessage: string | undefined;
  let failed = false;
  const answer = (status: number, payload: unknown) => {
    const r = ctx.response;
    r.status = status;
    r.setBody(JSON.stringify(payload), 'application/json');
    // The answer goes out through the graph (client node), not straight to the client.
    clearRelayed(ctx);
  };
  const gatewayError = (message: string) =>
    answer(502, { error: 'bad_gateway', code: 'GRPC_TRANSCODE_ANSWER', message });
  return {
    headers(headers, trailersOnly) {
      if (trailersOnly) {
        headerStatus = headers['grpc-status'] as string | undefined;
        headerMessage = headers['grpc-message'] as string | undefined;
        finish(headerStatus, headerMessage);
      }
    },
    data(chunk, next) {
      if (failed) {
        next();
        return;
      }
      bytes += chunk.length;
      if (bytes > maxBytes) {
        failed = true;
        gatewayError(`the gRPC answer exceeds max_response_bytes (${maxBytes})`);
        next(new Error('answer too large'));
        return;
      }
      chunks.push(chunk);
      next();
    },
    end(trailers, reset) {
      if (failed) return;
      if (reset !== undefined) {
        const status = statusOfReset(reset);
        finish(String(status), `upstream reset the call (HTTP/2 code ${reset})`);
        return;
      }
      finish(
        trailers?.['grpc-status'] as string | undefined,
        trailers?.['grpc-message'] as string | undefined,
      );
    },
  };

  function finish(statusText: string | undefined, rawMessage: string | undefined): void {
    const code = statusText === undefined ? 13 : Number(statusText);
    const message = rawMessage === undefined ? '' : safeDecode(rawMessage);
    if (statusText === undefined) {
      gatewayError('the gRPC answer has no grpc-status');
      return;
    }
    if (code !== 0) {
      answer(httpStatusOfGrpc(code), {
        error: (GRPC_CODE_NAMES[code] ?? 'UNKNOWN').toLowerCase(),
        grpc_status: code,
        grpc_code: GRPC_CODE_NAMES[code] ?? 'UNKNOWN',
        message,
      });
      return;
    }
    const frames = splitFrames(Buffer.concat(chunks));
    if (typeof frames === 'string') {
      gatewayError(`the gRPC answer is not whole frames: ${frames}`);
      return;
    }
    const messages: unknown[] = [];
    for (const frame of frames) {
      if (frame.flag !== 0) {
        gatewayError('the gRPC answer is compressed, which grpc-transcode does not decode');
        return;
      }
      try {
        messages.push(type.toObject(type.decode(frame.payload), TO_JSON));
      } catch (err) {
        gatewayError(
          `the gRPC answer does not decode as ${type.fullName.replace(/^\./, '')}: ${(err as Error).message}`,
        );
        return;
      }
    }
    if (streaming) answer(200, messages);
    else if (messages.length === 1) answer(200, messages[0]);
    else gatewayError(`a unary answer has ${messages.length} messages`);
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
