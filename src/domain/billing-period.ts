// Monthly billing cycles run from the tenant's anchor (its creation) on the same day of each
// month, clamped to the month's last day (an anchor on the 31st renews on Feb 28/29).

function addMonthsClamped(anchor: Date, months: number): Date {
  const y = anchor.getUTCFullYear();
  const m = anchor.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(y, m, Math.min(anchor.getUTCDate(), lastDay), anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds()),
  );
}

export function billingPeriod(anchor: Date, now: Date): { start: Date; end: Date } {
  let months = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  if (months < 0) months = 0;
  let start = addMonthsClamped(anchor, months);
  if (start > now && months > 0) start = addMonthsClamped(anchor, --months);
  return { start, end: addMonthsClamped(anchor, months + 1) };
}
