// Original file: proto/vigil/probe/v1/probe.proto

import type {
  RunResult as _vigil_probe_v1_RunResult,
  RunResult__Output as _vigil_probe_v1_RunResult__Output,
} from '../../../vigil/probe/v1/RunResult';

export interface ResultBatch {
  results?: _vigil_probe_v1_RunResult[];
}

export interface ResultBatch__Output {
  results: _vigil_probe_v1_RunResult__Output[];
}
