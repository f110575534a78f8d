import { GpunetError } from '#errors';

/** The recorder refused a node's report (recorded as NodeReportRefused). Terminal: the same report is refused again. */
export class ReportRefusedError extends GpunetError {
  readonly code = 'report_refused';
  readonly retryable = false;
}
