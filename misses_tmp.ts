import { catalogOf, loadCatalogFixtures, loadQueries, measure, ourRanker } from "./bench/search_quality.ts";
const fixtures = loadCatalogFixtures();
const q = measure(ourRanker(catalogOf(fixtures)), loadQueries(Deno.args[0]));
console.log(q.recallAt1.toFixed(3), q.recallAt5.toFixed(3), q.mrr.toFixed(3));
if (Deno.args[1]) for (const m of q.misses) console.log(`MISS ${m.query}\n   want ${m.expected.join(" | ")}\n   got  ${m.got.join(", ")}`);
