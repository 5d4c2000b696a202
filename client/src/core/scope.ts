import type { TallyClient } from './client.js';
import { merge } from './context.js';
import type { CallContext, CaptureOptions, IdentifyOptions, PageOptions, Properties, Traits, TrackOptions } from './types.js';

/**
 * The client's calls, bound to one actor (and account, license, session): what a server makes
 * per request with `client.scope({actorId, accountId})`. A call's own options win over the scope's.
 */
export class TallyScope {
  constructor(
    private readonly client: TallyClient,
    readonly context: CallContext,
  ) {}

  track(category: string, name: string, properties?: Properties, opts?: TrackOptions): string | undefined {
    return this.client.track(category, name, properties, merge<TrackOptions>(this.context, opts));
  }

  page(properties?: Properties, opts?: PageOptions): string | undefined {
    return this.client.page(properties, merge<PageOptions>(this.context, opts));
  }

  /** Links the scope's actor (unless opts.anonymousId names another) to `userId`, with traits. */
  identify(userId: string, traits?: Traits, opts?: IdentifyOptions): void {
    this.client.identify(userId, traits, merge<IdentifyOptions>(this.context, opts));
  }

  captureException(error: unknown, opts?: CaptureOptions): string | undefined {
    return this.client.captureException(error, merge<CaptureOptions>(this.context, opts));
  }

  startSession(properties?: Properties, opts?: CallContext): string | undefined {
    return this.client.startSession(properties, merge(this.context, opts));
  }

  endSession(opts?: { sessionId?: string }): void {
    this.client.endSession(merge({ sessionId: this.context.sessionId }, opts));
  }

  /** A narrower scope: this one's fields, with `context`'s over them. */
  scope(context: CallContext): TallyScope {
    return new TallyScope(this.client, merge(this.context, context));
  }

  /** Runs `fn` with this scope as the default of every call on the client inside it. */
  run<T>(fn: () => T): T {
    return this.client.withScope(this.context, fn);
  }
}
