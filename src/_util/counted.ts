/** "1 run", "3 runs": a count with its noun in the number it needs. */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
