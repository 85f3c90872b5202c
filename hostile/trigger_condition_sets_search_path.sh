#!/bin/bash
# A writer that once held TRIGGER leaves a trigger whose WHEN condition calls only pg_catalog's
# set_config: it moves the owner's session search_path to the writer's schema, whose operator =
# on bigint then runs in the owner's later statements (the segments replacement), with the owner's rights.
# Needs a superuser at 127.0.0.1:5432 (root, trust). Run from the worktree.
set -u
SS=${SS:-.venv/bin/simhash-store}
P="psql -X -q -h 127.0.0.1 -v ON_ERROR_STOP=1"
DB=h12_setcfg
cleanup() { $P -U root postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP ROLE IF EXISTS h12owner" -c "DROP ROLE IF EXISTS h12writer"; }
cleanup 2>/dev/null
$P -U root postgres -c "CREATE ROLE h12owner LOGIN" -c "CREATE ROLE h12writer LOGIN" \
   -c "CREATE DATABASE $DB OWNER root" -c "GRANT CREATE, CONNECT ON DATABASE $DB TO h12owner, h12writer"
URL=postgresql://h12owner@127.0.0.1:5432/$DB
$SS init --segments --db $URL
$P -U h12owner $DB -c "CREATE TABLE public.owner_secret AS SELECT 'owner only' AS s" 2>/dev/null || \
  $P -U h12owner $DB -c "CREATE SCHEMA own; CREATE TABLE own.owner_secret AS SELECT 'owner only'::text AS s"
$P -U h12owner $DB -c "GRANT USAGE ON SCHEMA simhash TO h12writer" \
   -c "GRANT SELECT, INSERT, UPDATE, DELETE, TRIGGER ON ALL TABLES IN SCHEMA simhash TO h12writer"
# The writer, while it holds TRIGGER:
$P -U h12writer $DB <<'SQL'
CREATE SCHEMA app;
GRANT USAGE ON SCHEMA app TO PUBLIC;
CREATE TABLE app.loot (who text, what text);
GRANT INSERT ON app.loot TO PUBLIC;
CREATE FUNCTION app.eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO app.loot SELECT current_user, (SELECT string_agg(s, ',') FROM own.owner_secret);
  RETURN $1 OPERATOR(pg_catalog.=) $2;
EXCEPTION WHEN others THEN
  INSERT INTO app.loot VALUES (current_user, SQLERRM);
  RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
GRANT EXECUTE ON FUNCTION app.eq(bigint, bigint) TO PUBLIC;
CREATE OPERATOR app.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = app.eq);
CREATE FUNCTION app.teq(text, text) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO app.loot SELECT current_user, (SELECT string_agg(s, ',') FROM own.owner_secret);
  RETURN $1 OPERATOR(pg_catalog.=) $2;
EXCEPTION WHEN others THEN
  INSERT INTO app.loot VALUES (current_user, SQLERRM);
  RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
GRANT EXECUTE ON FUNCTION app.teq(text, text) TO PUBLIC;
CREATE OPERATOR app.= (LEFTARG = text, RIGHTARG = text, FUNCTION = app.teq);
CREATE TRIGGER zz_settings BEFORE INSERT OR UPDATE ON simhash.documents FOR EACH ROW
  WHEN (pg_catalog.set_config('search_path', 'app, pg_catalog, pg_temp', false) IS NULL)
  EXECUTE FUNCTION pg_catalog.suppress_redundant_updates_trigger();
SQL
# The owner follows the refusal's advice: revokes TRIGGER (the trigger stays; its condition names only pg_catalog).
$P -U h12owner $DB -c "REVOKE TRIGGER ON ALL TABLES IN SCHEMA simhash FROM h12writer"
T=$(mktemp -d); printf '今天天气很好，我们一起去公园散步吧。这是第一篇文章的内容。\n' > $T/a.txt
printf '昨天下雨了，我们在家里看书喝茶。这是第二篇文章的内容。\n' > $T/b.txt
$SS add --db $URL $T; echo "add exit $?"
$SS add --db $URL $T/a.txt; echo "second add exit $?"
echo "--- app.loot (rows written by the writer's operator, with the role it ran as):"
$P -U root $DB -Atc "SELECT who, what, count(*) FROM app.loot GROUP BY 1, 2"
rm -rf $T
[ "${KEEP:-}" ] || cleanup
