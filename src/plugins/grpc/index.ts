import { grpcTranscode } from './grpc-transcode.js';
import { grpcWeb } from './grpc-web.js';

/** The gRPC family: protocol bridges in front of an upstream with scheme grpc/grpcs (docs/grpc.md). */
export const grpcPlugins = [grpcWeb, grpcTranscode] as const;
