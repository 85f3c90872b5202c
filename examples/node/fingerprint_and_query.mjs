// Fingerprint and query a simhash store from Node.js (18 or later: fetch is built in).
//
//   SIMHASH_HTTP=http://127.0.0.1:8080 SIMHASH_TOKEN="$(cat ~/.local/share/simhash-store/http-token-read-only)" \
//   DATABASE_URL='postgresql://news_reader:...@127.0.0.1:5433/simhash_store' node fingerprint_and_query.mjs 文件.txt
//
// Through the service (POST /fingerprint, POST /query), then the same query in SQL with `pg`
// (npm install pg), where simhash.from_hex turns the service's hex into the stored bigint.
import { readFileSync } from "node:fs";

const service = process.env.SIMHASH_HTTP ?? "http://127.0.0.1:8080";
const headers = { Authorization: `Bearer ${process.env.SIMHASH_TOKEN}`, "Content-Type": "application/json" };
const text = process.argv[2] ? readFileSync(process.argv[2], "utf8") : "中华人民共和国宪法保护公民的合法权利。";

async function post(path, body) {
  const answer = await fetch(service + path, { method: "POST", headers, body: JSON.stringify(body) });
  const json = await answer.json();
  if (!answer.ok) throw new Error(`${path}: ${answer.status} ${json.error}`);
  return json;
}

const { results: [printed] } = await post("/fingerprint", { texts: [text] });
if (printed.fingerprint === null) throw new Error(printed.error); // no features: empty, punctuation only
// `signed` is PostgreSQL's bigint as a decimal string (BigInt(printed.signed) if you need the number).
console.log("fingerprint", printed.fingerprint, "signed", printed.signed);

const { results: [found] } = await post("/query", { texts: [text], k: 3 });
console.log("service:", found.matches.map((m) => `${m.key} (${m.distance})`).join(", ") || "nothing within 3 bits");

if (process.env.DATABASE_URL) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  const { rows } = await client.query(
    "SELECT key, distance FROM simhash.near(simhash.from_hex($1), $2) ORDER BY distance, key",
    [printed.fingerprint, 3],
  );
  console.log("SQL:    ", rows.map((r) => `${r.key} (${r.distance})`).join(", ") || "nothing within 3 bits");
  await client.end();
}
