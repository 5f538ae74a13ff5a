"""The vocabularies only the unseen split draws: two domains for each held-out shape.

Nothing here reaches train or test: not the shapes (snowflake, dual, threaded, bom), not an
entity noun or table spelling of these domains (tests check that none is a training one).
Generic attributes recur (a name, a date): every schema has them.
"""

from __future__ import annotations

from tempering.envs.sql.shapes.vocab import PEOPLE, Domain, cat, day, ent, flag, label, num, parts, ref

PERSON = label("name|full name", "name|full name|person name")

SNOWFLAKE = (
    Domain("birding", "a birdwatching society's sightings", "snowflake", {
        "outer": ent("reserve", "reserves", "reserve|nature reserve|sanctuary", label("reserve name", "name|title"),
                     parts("Blackwater|Fenwick|Gull|Heron|Otter", "Marshes|Reserve|Wetlands")),
        "dim": ent("habitat", "habitats", "habitat|zone area|biotope", label("habitat name", "name|hab name|label"),
                   parts("Reed|Salt|Beech|Heath|Dune|Alder", "Marsh|Wood|Bed|Scrub|Pool|Carr"),
                   num("area in hectares", "ha|size ha|extent", 0.5, 60.0, nullable=0.2)),
        "other": ent("observer", "observers", "observer|birder|watcher", PERSON, PEOPLE,
                     cat("experience level", "lvl|grade|rank", "novice|experienced|expert")),
        "fact": ent("sighting", "sightings", "sighting|obs record|tally sheet", None, None,
                    num("number of birds", "tally|n seen|headcount", 1, 60),
                    day("sighting date", "spotted on|watch dt|obs day", 2022, 2024),
                    cat("species", "taxon|bird|sp name", "curlew|lapwing|avocet|teal|redshank|bittern", nullable=0.1),
                    flag("confirmed", "verified|conf|vetted")),
    }),
    Domain("markets", "a council's street markets and their trade", "snowflake", {
        "outer": ent("market", "markets", "market|market site", label("market name", "name|site name"),
                     parts("Riverside|Cathedral|Corn|Flower|Night", "Market|Hall|Yard")),
        "dim": ent("stall", "stalls", "stall|pitch|trader stand", label("stall name", "name|trading as|sign"),
                   parts("Green|Happy|Old|Little|Top", "Grocer|Basket|Barrow|Crate|Larder"),
                   num("weekly rent", "pitch fee|rent wk|rent", 40.0, 300.0, additive=False)),
        "other": ent("produce line", "produce lines", "produce|crop line|goods", label("produce name", "name|item"),
                     parts("Heritage|Winter|Purple|Baby|Giant|Sweet", "Carrots|Beets|Kale|Squash|Leeks|Plums")),
        "fact": ent("trade", "trades", "trade|market sale|takings row", None, None,
                    num("crates sold", "qty|crates|units", 1, 30, role="qty"),
                    num("price per crate", "crate prc|unit price|each", 4.0, 45.0, role="price"),
                    day("trading day", "market day|trade dt|sold", 2023, 2024)),
    }),
)

DUAL = (
    Domain("gliding", "a gliding club's flights between airfields", "dual", {
        "place": ent("airfield", "airfields", "airfield|field site|aerodrome", label("airfield name", "name|title"),
                     parts("Kestrel|Windmill|Chalk|Heron|Long|Barrow", "Hill|Down|Field|Common")),
        "agent": ent("pilot", "pilots", "pilot|aviator|club pilot", PERSON, PEOPLE,
                     cat("licence class", "lic|rating|cert", "A|B|C|Silver|Gold")),
        "move": ent("flight", "flights", "flight|sortie|flight log", None, None,
                    num("time aloft in minutes", "mins|duration|air time", 12, 420),
                    num("distance flown", "km|dist|xc km", 5.0, 400.0, nullable=0.3),
                    day("flight date", "flown on|launch dt|day", 2022, 2024)),
    }, refs={"from": ref("launch site|departure airfield", "launch site|from field|origin"),
             "to": ref("landing site|arrival airfield", "landing site|to field|destination")}),
    Domain("chess", "a chess club's games", "dual", {
        "place": ent("player", "players", "player|club player|competitor", PERSON, PEOPLE,
                     num("Elo rating", "elo|strength|rtg", 1100, 2450, nullable=0.2, additive=False),
                     cat("country", "fed|nation|flag", "NOR|IND|ESP|ARM|POL|NED")),
        "agent": ent("tournament", "tournaments", "tournament|event|congress",
                     label("tournament name", "name|event name|title"),
                     parts("Spring|Autumn|Coastal|Winter|Summer", "Open|Rapid|Classic|Blitz|Cup")),
        "move": ent("game", "games", "game|board result|pairing", None, None,
                    cat("result", "res|score|outcome", "white win|black win|draw"),
                    num("number of moves", "ply|move cnt|len", 18, 120),
                    day("date played", "played|rnd dt|on date", 2022, 2024)),
    }, refs={"from": ref("white player|player with the white pieces", "white|white plr|w player"),
             "to": ref("black player|player with the black pieces", "black|black plr|b player")}),
)

THREADED = (
    Domain("forum", "a hobby forum's boards, posts and reactions", "threaded", {
        "top": ent("board", "boards", "board|forum|section", label("board name", "name|title|board"),
                   parts("Baking|Tiling|Compost|Cycling|Sewing|Ponds", "Corner|Talk|Help|Lounge")),
        "node": ent("post", "posts", "post|message|thread post", label("subject", "subject|title|heading"),
                    parts("Question about|Thoughts on|Help with|Update on|Idea for", "Sourdough|Grout|Worms|"
                          "Bike Gears|Bobbins|Pond Pumps|Seedlings"),
                    day("posting date", "posted|msg dt|created at", 2021, 2024),
                    num("number of likes", "likes|upvotes|kudos", 0, 250)),
        "leaf": ent("reaction", "reactions", "reaction|emoji response|vote", None, None,
                    cat("kind of reaction", "emoji|kind|rx type", "like|laugh|thanks|insightful"),
                    day("reaction date", "reacted|rx dt|reacted at", 2021, 2024)),
    }, refs={"self": ref("parent post", "reply to|parent post|in reply to|thread parent")}),
    Domain("rivers", "a river authority's basins, rivers and gauges", "threaded", {
        "top": ent("basin", "basins", "basin|catchment|watershed", label("basin name", "name|catchment name"),
                   parts("Severn|Tweed|Usk|Wye|Tay|Eden", "Basin|Catchment")),
        "node": ent("river", "rivers", "river|watercourse|stream", label("river name", "name|river|title"),
                    parts("Afon|Black|Little|Upper|Swift|Clear", "Water|Brook|Beck|Burn|Rill|Run"),
                    num("length in kilometres", "km|len|course km", 3, 220, nullable=0.15)),
        "leaf": ent("flow measurement", "flow measurements", "flow measurement|gauging|level log", None, None,
                    num("flow rate", "cumecs|q|discharge", 0.2, 180.0, additive=False),
                    day("measurement date", "gauged on|msr dt|sampled", 2022, 2024)),
    }, refs={"self": ref("receiving river|downstream river", "flows into|outflow|parent river|tributary of")}),
)

BOM = (
    Domain("kits", "an electronics maker's bill of materials", "bom", {
        "node": ent("part", "parts", "part|component|item master", label("part name", "name|part name|descr"),
                    parts("Micro|Power|Signal|Sensor|Relay|Audio", "Board|Module|Unit|Driver|Cable|Shield"),
                    num("unit cost", "cost ea|price|std cost", 0.2, 90.0, additive=False),
                    num("lead time in days", "lead days|lt|days to ship", 1, 60, nullable=0.2, additive=False),
                    cat("part category", "cat|family|class", "passive|active|mechanical|cable|enclosure"),
                    day("date introduced", "intro dt|released|first stocked", 2015, 2024),
                    flag("discontinued", "eol|end of life|obsolete", 0.2)),
        "link": ent("bill of materials entry", "bill of materials entries", "bom|bom line|structure", None, None,
                    num("quantity used", "qty per|n required|per assy", 1, 12)),
    }, refs={"left": ref("assembly", "assembly|parent part|kit"), "right": ref("component", "component|child part|sub")},
        verbs=("directly use", "are directly used in")),
    Domain("skills", "a training academy's skills and their prerequisites", "bom", {
        "node": ent("skill", "skills", "skill|competency|module", label("skill name", "name|skill|title"),
                    parts("Basic|Advanced|Applied|Field|Studio", "Welding|Pruning|Knitting|Joinery|Plastering|Glazing"),
                    num("hours to learn", "hrs|effort|study h", 4, 120, nullable=0.15),
                    cat("trade", "discipline|dept|area", "metalwork|woodwork|textiles|building|horticulture"),
                    day("date added to the syllabus", "added|syl dt|since", 2016, 2024)),
        "link": ent("prerequisite", "prerequisites", "prerequisite|skill requirement|depends on", None, None),
    }, refs={"left": ref("dependent skill", "skill|dependent|for skill"),
             "right": ref("prerequisite", "requires|prereq|needs")}, verbs=("require", "are required for")),
)

UNSEEN_DOMAINS = {d.key: d for d in SNOWFLAKE + DUAL + THREADED + BOM}
