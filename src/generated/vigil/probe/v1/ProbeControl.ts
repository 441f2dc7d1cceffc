// Original file: proto/vigil/probe/v1/probe.proto

import type * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import type {
  CoordinatorMessage as _vigil_probe_v1_CoordinatorMessage,
  CoordinatorMessage__Output as _vigil_probe_v1_CoordinatorMessage__Output,
} from '../../../vigil/probe/v1/CoordinatorMessage';
import type {
  ProbeMessage as _vigil_probe_v1_ProbeMessage,
  ProbeMessage__Output as _vigil_probe_v1_ProbeMessage__Output,
} from '../../../vigil/probe/v1/ProbeMessage';

export interface ProbeControlClient extends grpc.Client {
  Connect(
    metadata: grpc.Metadata,
    options?: grpc.CallOptions,
  ): grpc.ClientDuplexStream<
    _vigil_probe_v1_ProbeMessage,
    _vigil_probe_v1_CoordinatorMessage__Output
  >;
  Connect(
    options?: grpc.CallOptions,
  ): grpc.ClientDuplexStream<
    _vigil_probe_v1_ProbeMessage,
    _vigil_probe_v1_CoordinatorMessage__Output
  >;
  connect(
    metadata: grpc.Metadata,
    options?: grpc.CallOptions,
  ): grpc.ClientDuplexStream<
    _vigil_probe_v1_ProbeMessage,
    _vigil_probe_v1_CoordinatorMessage__Output
  >;
  connect(
    options?: grpc.CallOptions,
  ): grpc.ClientDuplexStream<
    _vigil_probe_v1_ProbeMessage,
    _vigil_probe_v1_CoordinatorMessage__Output
  >;
}

export interface ProbeControlHandlers extends grpc.UntypedServiceImplementation {
  Connect: grpc.handleBidiStreamingCall<
    _vigil_probe_v1_ProbeMessage__Output,
    _vigil_probe_v1_CoordinatorMessage
  >;
}

export interface ProbeControlDefinition extends grpc.ServiceDefinition {
  Connect: MethodDefinition<
    _vigil_probe_v1_ProbeMessage,
    _vigil_probe_v1_CoordinatorMessage,
    _vigil_probe_v1_ProbeMessage__Output,
    _vigil_probe_v1_CoordinatorMessage__Output
  >;
}
