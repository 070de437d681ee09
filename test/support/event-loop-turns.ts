/** Counts the event loop's turns until `stop()`: work that yields between pieces lets it turn. */
export function countTurns(): { stop(): number } {
  let turns = 0;
  let counting = true;
  const tick = () => {
    turns++;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop: () => {
      counting = false;
      return turns;
    },
  };
}
