/** Where a request came from, for the events it causes and the queries it asks. */
export interface RequestTrace {
  correlationId?: string | undefined;
}
