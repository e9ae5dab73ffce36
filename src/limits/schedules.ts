// Schedules of conditional policies: periods, in a time zone, during which the policy is NOT
// enforced. A period is [start_time, end_time) local time on the listed weekdays or dates; an
// end before the start runs past midnight into the next day (that tail belongs to the day the
// period started). Results are cached per minute: every bound is minute-granular.
import type { Static } from '@sinclair/typebox';
import type { ScheduleSchema } from '../resources/rate-limit-policy.ts';

type Schedule = Static<typeof ScheduleSchema>;

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface LocalTime {
  /** Local calendar day as `YYYY-MM-DD`, its weekday, and minutes since local midnight. */
  date: string;
  weekday: string;
  minutes: number;
  /** The previous local day, for periods that run past midnight. */
  prevDate: string;
  prevWeekday: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

function localTime(nowMs: number, timeZone: string): LocalTime {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(nowMs)) parts[p.type] = p.value;
  const y = Number(parts.year);
  const mo = Number(parts.month);
  const d = Number(parts.day);
  const day = new Date(Date.UTC(y, mo - 1, d));
  const prev = new Date(day.getTime() - 86_400_000);
  return {
    date: day.toISOString().slice(0, 10),
    weekday: WEEKDAYS[day.getUTCDay()],
    minutes: Number(parts.hour) * 60 + Number(parts.minute),
    prevDate: prev.toISOString().slice(0, 10),
    prevWeekday: WEEKDAYS[prev.getUTCDay()],
  };
}

const toMinutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

function dayListed(s: Schedule, date: string, weekday: string): boolean {
  if (s.dates !== undefined) return s.dates.includes(date);
  if (s.days_of_week !== undefined) return (s.days_of_week as string[]).includes(weekday);
  return true;
}

/** Is `nowMs` inside this schedule's period? */
export function inSchedule(s: Schedule, nowMs: number): boolean {
  const t = localTime(nowMs, s.timezone);
  const start = toMinutes(s.start_time);
  const end = toMinutes(s.end_time);
  if (start < end) return t.minutes >= start && t.minutes < end && dayListed(s, t.date, t.weekday);
  if (t.minutes >= start && dayListed(s, t.date, t.weekday)) return true;
  return t.minutes < end && dayListed(s, t.prevDate, t.prevWeekday);
}

/** A predicate "is enforcement suspended now", memoised per minute. */
export function compileSchedules(schedules: readonly Schedule[] | undefined): ((nowMs: number) => boolean) | undefined {
  if (schedules === undefined || schedules.length === 0) return undefined;
  let minute = -1;
  let result = false;
  return (nowMs) => {
    const m = Math.floor(nowMs / 60_000);
    if (m !== minute) {
      minute = m;
      result = schedules.some((s) => inSchedule(s, nowMs));
    }
    return result;
  };
}
