// Original file: proto/vigil/probe/v1/probe.proto

import type {
  Hello as _vigil_probe_v1_Hello,
  Hello__Output as _vigil_probe_v1_Hello__Output,
} from '../../../vigil/probe/v1/Hello';
import type {
  ResultBatch as _vigil_probe_v1_ResultBatch,
  ResultBatch__Output as _vigil_probe_v1_ResultBatch__Output,
} from '../../../vigil/probe/v1/ResultBatch';
import type {
  Heartbeat as _vigil_probe_v1_Heartbeat,
  Heartbeat__Output as _vigil_probe_v1_Heartbeat__Output,
} from '../../../vigil/probe/v1/Heartbeat';

export interface ProbeMessage {
  hello?: _vigil_probe_v1_Hello | null;
  results?: _vigil_probe_v1_ResultBatch | null;
  heartbeat?: _vigil_probe_v1_Heartbeat | null;
  body?: 'hello' | 'results' | 'heartbeat';
}

export interface ProbeMessage__Output {
  hello?: _vigil_probe_v1_Hello__Output | null;
  results?: _vigil_probe_v1_ResultBatch__Output | null;
  heartbeat?: _vigil_probe_v1_Heartbeat__Output | null;
  body?: 'hello' | 'results' | 'heartbeat';
}
