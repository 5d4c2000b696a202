import type { QueueStorage } from './types.js';
import { uuidv7 } from './uuid.js';

// Who events are about: this device's anonymous id (kept across restarts and page loads), and the
// user id once identify() was called. Kept in the storage's small synchronous state.

const KEY = 'identity';

export class Identity {
  anonymousId: string;
  userId: string | undefined;

  constructor(
    private readonly storage: QueueStorage,
    override: string | undefined,
    private readonly onError: (err: unknown) => void,
  ) {
    let saved: { anonymous_id?: unknown; user_id?: unknown } = {};
    try {
      saved = JSON.parse(storage.getState(KEY) ?? '{}');
    } catch {
      // unreadable: start over with a new anonymous id
    }
    this.anonymousId = override ?? (typeof saved.anonymous_id === 'string' ? saved.anonymous_id : uuidv7());
    this.userId = typeof saved.user_id === 'string' ? saved.user_id : undefined;
    if (this.anonymousId !== saved.anonymous_id) this.save();
  }

  get actorId(): string {
    return this.userId ?? this.anonymousId;
  }

  /** logout: a new anonymous id, no user. */
  reset(): void {
    this.anonymousId = uuidv7();
    this.userId = undefined;
    this.save();
  }

  save(): void {
    try {
      this.storage.setState(KEY, JSON.stringify({ anonymous_id: this.anonymousId, ...(this.userId !== undefined ? { user_id: this.userId } : {}) }));
    } catch (err) {
      this.onError(err);
    }
  }
}
