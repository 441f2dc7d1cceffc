/**
 * Loads the coordinator↔probe protocol (proto/vigil/probe/v1/probe.proto) for both sides.
 * Options match `npm run generate`, so src/generated types describe what arrives.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import type { ProtoGrpcType } from '../generated/probe.js';

/** Major version of the protocol; a probe of another major is refused (Hello.protocol_version). */
export const PROTOCOL_VERSION = 1;

/** Path of the .proto file (this module runs from dist/src/common/). */
export const PROTO_PATH = fileURLToPath(
  new URL('../../../proto/vigil/probe/v1/probe.proto', import.meta.url),
);

let cached: ProtoGrpcType | null = null;

/** The loaded package; `.vigil.probe.v1.ProbeControl` is the service and client class. */
export function loadProbeProto(): ProtoGrpcType {
  if (cached) return cached;
  const def = protoLoader.loadSync(PROTO_PATH, {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  cached = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  return cached;
}
