/**
 * A forced interleaving on one ManualClock: tasks (contenders, holders) run against DynamoDB
 * Local, and time moves only when every live task is parked on the clock, straight to the next
 * wake-up. A task is paused by a gate in a hook (it stops counting as live until released), or
 * crashed by a gate that is never released.
 */
import { ManualClock } from '../../lib/protocol/index.js';
import { until } from './fixtures.js';

export interface Gate {
  /** Blocks the caller until `open()` (never, for a crash). */
  pass(): Promise<void>;
  open(): void;
  /** True while a task is blocked in `pass()`. */
  readonly holding: boolean;
}

export class Scene {
  readonly clock = new ManualClock();
  private live = 0;
  private readonly errors: unknown[] = [];

  /** Runs `fn` as a task of the scene; its failure fails the next `run`. */
  start(fn: () => Promise<unknown>): Promise<void> {
    this.live++;
    return fn().then(
      () => void this.live--,
      (e: unknown) => {
        this.live--;
        this.errors.push(e);
      },
    );
  }

  gate(): Gate {
    let opened = false;
    let release: (() => void) | undefined;
    const scene = this;
    return {
      get holding() {
        return release !== undefined;
      },
      pass() {
        if (opened) return Promise.resolve();
        scene.live--;
        return new Promise<void>((resolve) => {
          release = () => {
            release = undefined;
            scene.live++;
            resolve();
          };
        });
      },
      open() {
        opened = true;
        release?.();
      },
    };
  }

  /** Waits (real time) until every live task is parked on the clock, or `done()`. */
  async settle(done: () => boolean = () => false): Promise<void> {
    await until(() => done() || this.errors.length > 0 || this.clock.pendingSleepers === this.live, 'every task parked on the clock');
    if (this.errors.length > 0) throw this.errors[0];
  }

  /** Moves time from wake-up to wake-up until `done()`. */
  async run(done: () => boolean, maxSteps = 500): Promise<void> {
    for (let step = 0; step < maxSteps; step++) {
      await this.settle(done);
      if (done()) return;
      const next = this.clock.nextWakeAt;
      if (next === undefined) throw new Error('no task is sleeping and the scene is not done: stuck');
      await this.clock.advance(next - this.clock.monotonicNow());
    }
    throw new Error(`the scene did not finish within ${maxSteps} steps`);
  }
}
