// Original file: proto/vigil/probe/v1/probe.proto

import type {
  Welcome as _vigil_probe_v1_Welcome,
  Welcome__Output as _vigil_probe_v1_Welcome__Output,
} from '../../../vigil/probe/v1/Welcome';
import type {
  RunBatch as _vigil_probe_v1_RunBatch,
  RunBatch__Output as _vigil_probe_v1_RunBatch__Output,
} from '../../../vigil/probe/v1/RunBatch';
import type {
  Heartbeat as _vigil_probe_v1_Heartbeat,
  Heartbeat__Output as _vigil_probe_v1_Heartbeat__Output,
} from '../../../vigil/probe/v1/Heartbeat';

export interface CoordinatorMessage {
  welcome?: _vigil_probe_v1_Welcome | null;
  runs?: _vigil_probe_v1_RunBatch | null;
  heartbeat?: _vigil_probe_v1_Heartbeat | null;
  body?: 'welcome' | 'runs' | 'heartbeat';
}

export interface CoordinatorMessage__Output {
  welcome?: _vigil_probe_v1_Welcome__Output | null;
  runs?: _vigil_probe_v1_RunBatch__Output | null;
  heartbeat?: _vigil_probe_v1_Heartbeat__Output | null;
  body?: 'welcome' | 'runs' | 'heartbeat';
}
