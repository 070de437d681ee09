/**
 * A failure of the lean upstream client, with the `code` undici gives the same failure, so
 * src/outbound/classify.ts maps both clients' failures onto the same catalog codes and reasons.
 */
export class LeanClientError extends Error {
  readonly code: string;

  constructor(message: string, code: string) {
    super(message);
    this.name = 'LeanClientError';
    this.code = code;
  }
}

export const otherSideClosed = (): LeanClientError =>
  new LeanClientError('other side closed', 'UND_ERR_SOCKET');
