import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type {
  CoordinatorMessage as _vigil_probe_v1_CoordinatorMessage,
  CoordinatorMessage__Output as _vigil_probe_v1_CoordinatorMessage__Output,
} from './vigil/probe/v1/CoordinatorMessage';
import type {
  Heartbeat as _vigil_probe_v1_Heartbeat,
  Heartbeat__Output as _vigil_probe_v1_Heartbeat__Output,
} from './vigil/probe/v1/Heartbeat';
import type {
  Hello as _vigil_probe_v1_Hello,
  Hello__Output as _vigil_probe_v1_Hello__Output,
} from './vigil/probe/v1/Hello';
import type {
  ProbeControlClient as _vigil_probe_v1_ProbeControlClient,
  ProbeControlDefinition as _vigil_probe_v1_ProbeControlDefinition,
} from './vigil/probe/v1/ProbeControl';
import type {
  ProbeMessage as _vigil_probe_v1_ProbeMessage,
  ProbeMessage__Output as _vigil_probe_v1_ProbeMessage__Output,
} from './vigil/probe/v1/ProbeMessage';
import type {
  ResultBatch as _vigil_probe_v1_ResultBatch,
  ResultBatch__Output as _vigil_probe_v1_ResultBatch__Output,
} from './vigil/probe/v1/ResultBatch';
import type {
  RunBatch as _vigil_probe_v1_RunBatch,
  RunBatch__Output as _vigil_probe_v1_RunBatch__Output,
} from './vigil/probe/v1/RunBatch';
import type {
  RunRequest as _vigil_probe_v1_RunRequest,
  RunRequest__Output as _vigil_probe_v1_RunRequest__Output,
} from './vigil/probe/v1/RunRequest';
import type {
  RunResult as _vigil_probe_v1_RunResult,
  RunResult__Output as _vigil_probe_v1_RunResult__Output,
} from './vigil/probe/v1/RunResult';
import type {
  Welcome as _vigil_probe_v1_Welcome,
  Welcome__Output as _vigil_probe_v1_Welcome__Output,
} from './vigil/probe/v1/Welcome';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new (...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  vigil: {
    probe: {
      v1: {
        CoordinatorMessage: MessageTypeDefinition<
          _vigil_probe_v1_CoordinatorMessage,
          _vigil_probe_v1_CoordinatorMessage__Output
        >;
        Heartbeat: MessageTypeDefinition<
          _vigil_probe_v1_Heartbeat,
          _vigil_probe_v1_Heartbeat__Output
        >;
        Hello: MessageTypeDefinition<_vigil_probe_v1_Hello, _vigil_probe_v1_Hello__Output>;
        ProbeControl: SubtypeConstructor<typeof grpc.Client, _vigil_probe_v1_ProbeControlClient> & {
          service: _vigil_probe_v1_ProbeControlDefinition;
        };
        ProbeMessage: MessageTypeDefinition<
          _vigil_probe_v1_ProbeMessage,
          _vigil_probe_v1_ProbeMessage__Output
        >;
        ResultBatch: MessageTypeDefinition<
          _vigil_probe_v1_ResultBatch,
          _vigil_probe_v1_ResultBatch__Output
        >;
        RunBatch: MessageTypeDefinition<_vigil_probe_v1_RunBatch, _vigil_probe_v1_RunBatch__Output>;
        RunRequest: MessageTypeDefinition<
          _vigil_probe_v1_RunRequest,
          _vigil_probe_v1_RunRequest__Output
        >;
        RunResult: MessageTypeDefinition<
          _vigil_probe_v1_RunResult,
          _vigil_probe_v1_RunResult__Output
        >;
        Welcome: MessageTypeDefinition<_vigil_probe_v1_Welcome, _vigil_probe_v1_Welcome__Output>;
      };
    };
  };
}
