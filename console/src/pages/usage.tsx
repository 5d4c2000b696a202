// Usage and plan: events this billing cycle against the plan's allotment, the billing state, and
// what happens next on this plan (docs/plans-and-limits.md), from GET /v1/usage.
import { api } from '../api';
import { fmt, pct, useQuery, when } from '../data';
import { Card, Show } from '../ui';
import type { PageProps } from './common';

export interface Usage {
  plan: string;
  policy: 'cap' | 'charge' | null;
  billing_state: 'accepting' | 'blocked';
  block_reason: 'quota_exhausted' | 'trial_expired' | 'subscription_cancelled' | null;
  trial_ends_at: string | null;
  subscription_status: 'active' | 'cancelled';
  quota_grace_hours: number;
  cancel_grace_hours: number;
  usage: { period_start: string; period_end: string; events: number; allotment: number | null; overage: number };
}

const day = (iso: string) => iso.slice(0, 10);

/** What happens next, in the words of docs/plans-and-limits.md's table. */
export function nextSteps(u: Usage): string[] {
  const out: string[] = [];
  const { events, allotment, period_end } = u.usage;
  if (u.billing_state === 'blocked') {
    if (u.block_reason === 'quota_exhausted')
      out.push(
        `Ingestion is blocked (402): the allotment is used up and its ${u.quota_grace_hours} h grace period is over. It resumes when the next cycle begins on ${day(period_end)}, or at once on a plan with a larger allotment.`,
      );
    if (u.block_reason === 'trial_expired')
      out.push('Ingestion is blocked (402): the trial has ended. It resumes at once when the tenant moves to a paid plan.');
    if (u.block_reason === 'subscription_cancelled')
      out.push('Ingestion is blocked (402): the subscription was cancelled. It resumes at once when the subscription is reactivated.');
    out.push('Clients keep the refused events and retry with backoff: nothing is lost while they run.');
    return out;
  }
  if (allotment === null) return ['This plan has no allotment: events are counted, never limited or billed, and ingestion is never blocked.'];
  if (u.policy === 'cap')
    out.push(
      events >= allotment
        ? `The allotment is reached: events are still accepted for ${u.quota_grace_hours} h from the moment it was reached, then refused (402) until the next cycle begins on ${day(period_end)}. Upgrade to keep sending.`
        : `At ${fmt.format(allotment)} events this cycle, ingestion keeps going for ${u.quota_grace_hours} h, then is refused (402) until the next cycle begins on ${day(period_end)}, unless the plan is upgraded.`,
    );
  if (u.policy === 'charge')
    out.push(
      u.usage.overage > 0
        ? `${fmt.format(u.usage.overage)} events over the allotment so far: they are accepted and billed as overage.`
        : `Past ${fmt.format(allotment)} events this cycle, events are still accepted; those over the allotment are billed as overage.`,
    );
  if (u.plan === 'trial' && u.trial_ends_at) out.push(`The trial ends on ${when(u.trial_ends_at)}; after that ingestion is refused (402) until a paid plan.`);
  if (u.subscription_status === 'cancelled')
    out.push(
      `The subscription is cancelled: ingestion continues for ${u.cancel_grace_hours} h from the cancellation, then is refused until it is reactivated.`,
    );
  out.push(`The counter starts again at 0 when the next cycle begins on ${day(period_end)}.`);
  return out;
}

export function UsagePage({ access }: PageProps) {
  const q = useQuery('usage', () => api<Usage>('/v1/usage'));
  void access;
  return (
    <Show q={q} what="usage">
      {(u) => {
        const { events, allotment } = u.usage;
        const share = allotment ? Math.min(100, (events / allotment) * 100) : 0;
        return (
          <div data-report-ready="true">
            <div class="cards">
              <Card
                id="usage-events"
                label="Events this cycle"
                value={fmt.format(events)}
                hint={
                  <>
                    <span class="nw">{day(u.usage.period_start)}</span> to <span class="nw">{day(u.usage.period_end)}</span>
                  </>
                }
              />
              <Card id="usage-allotment" label="Allotment" value={allotment === null ? 'none' : fmt.format(allotment)} hint={`plan: ${u.plan}`} />
              <Card
                id="usage-state"
                label="Billing state"
                value={u.billing_state === 'accepting' ? 'accepting' : 'blocked'}
                hint={
                  u.block_reason
                    ? u.block_reason.replaceAll('_', ' ')
                    : u.policy === 'cap'
                      ? 'capped at the allotment'
                      : u.policy === 'charge'
                        ? 'overage billed'
                        : undefined
                }
              />
              {u.usage.overage > 0 && <Card id="usage-overage" label="Overage" value={fmt.format(u.usage.overage)} />}
            </div>
            {allotment !== null && (
              <div class="meter">
                <label for="usage-meter">
                  {fmt.format(events)} of {fmt.format(allotment)} events ({pct(share, 100)})
                </label>
                <meter id="usage-meter" min={0} max={allotment} value={Math.min(events, allotment)} low={allotment * 0.8} high={allotment * 0.95} optimum={0} />
              </div>
            )}
            <section>
              <h2>What happens next</h2>
              <ul class="next">
                {nextSteps(u).map((line) => (
                  <li key={line}>{line}</li>
                ))}
              </ul>
              <p class="muted">
                Plans and limits are set by your operator (<code>npm run admin -- set-plan &lt;tenant&gt; &lt;plan&gt;</code>).
              </p>
            </section>
          </div>
        );
      }}
    </Show>
  );
}
