// Original file: proto/vigil/probe/v1/probe.proto

import type {
  RunRequest as _vigil_probe_v1_RunRequest,
  RunRequest__Output as _vigil_probe_v1_RunRequest__Output,
} from '../../../vigil/probe/v1/RunRequest';

export interface RunBatch {
  runs?: _vigil_probe_v1_RunRequest[];
}

export interface RunBatch__Output {
  runs: _vigil_probe_v1_RunRequest__Output[];
}
