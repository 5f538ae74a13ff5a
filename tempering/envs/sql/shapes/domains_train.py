"""The vocabularies train and test draw: three domains for each training shape.

Each column concept lists the question's words first and the column's spellings second
("opening date" / "opened on|open dt|dt opened"); many spellings share no word with the
question, so the column has to be found by what it means. No table here is a table of
`sql/handwritten-v1`, and no entity noun here is one of domains_unseen.py's (both tested).
"""

from __future__ import annotations

from tempering.envs.sql.shapes.vocab import PEOPLE, Domain, cat, day, ent, flag, label, num, parts, ref, text

PERSON = label("name|full name", "name|full name|person name")
CITY = cat("city", "city|town|location", "Lyon|Porto|Leeds|Graz|Turin|Ghent|Bergen|Cork|Krakow|Utrecht")
EMAIL = text("email address", "email|contact email|e mail", "{slug}@mail.test", 0.25)
PHONE = text("phone number", "phone|tel|contact no", "+44 7{n}{nn}", 0.3)

CHAIN = (
    Domain("bank", "a retail bank's branches and accounts", "chain", {
        "root": ent("region", "regions", "region|area", label("region name", "name|region name|title"),
                    parts("North|South|East|West|Coastal|Upland", "District|Province")),
        "top": ent("branch", "branches", "branch|office", label("branch name", "name|branch name|branch title"),
                   parts("Harbour|Market|Station|Castle|Mill|Bridge|Abbey|Park", "Street|Square|Road|Gate"), CITY,
                   day("opening date", "opened on|open dt|est date", 1990, 2015),
                   flag("open on Saturdays", "sat open|weekend hours|saturday service")),
        "mid": ent("account", "accounts", "account|acct", label("holder name", "holder|owner name|account holder"),
                   PEOPLE, day("opening date", "dt open|opened|open date", 2015, 2023),
                   num("balance", "bal|current balance|ledger amount", 0.0, 25000.0),
                   cat("account type", "product code|acct kind|plan", "checking|savings|business|student|joint"),
                   EMAIL),
        "leaf": ent("payment", "payments", "payment|txn|posting", None, None,
                    num("amount", "amt|value|sum paid", 5.0, 2500.0),
                    day("payment date", "paid on|posted dt|value dt", 2021, 2024),
                    cat("channel", "via|method|pay channel", "card|transfer|cash|mobile|cheque")),
    }),
    Domain("couriers", "a parcel courier's depots, riders and drops", "chain", {
        "top": ent("depot", "depots", "depot|hub", label("depot name", "name|depot name|hub name"),
                   parts("Northgate|Riverside|Airport|Canal|Old Mill|Eastfield", "Hub|Depot|Yard"), CITY,
                   num("floor area in square metres", "area sqm|floor space|size m2", 400, 6000)),
        "mid": ent("rider", "riders", "rider|courier|driver", PERSON, PEOPLE,
                   cat("vehicle", "veh type|transport|ride", "bicycle|cargo bike|scooter|van"),
                   day("start date", "hired on|hire dt|joined", 2018, 2023),
                   num("customer rating", "avg stars|rtg|score", 2.5, 5.0, nullable=0.2, additive=False)),
        "leaf": ent("drop", "drops", "drop|delivery|stop log", None, None,
                    num("parcel weight", "kg|wt kg|mass", 0.2, 30.0),
                    day("delivery date", "dropped on|dlvry dt|completed", 2022, 2024),
                    cat("outcome", "status|state|result", "delivered|returned|refused|left with neighbour"),
                    num("delay in minutes", "mins late|lateness|late by", 0, 90, nullable=0.4)),
    }),
    Domain("coop", "a farming co-operative's growers, fields and harvests", "chain", {
        "top": ent("grower", "growers", "grower|farm|member farm", label("farm name", "name|farm name|holding"),
                   parts("Willow|Hazel|Elder|Rowan|Oak|Birch|Maple|Ash", "Farm|Acres|Croft|Meadows"),
                   cat("county", "county|shire|district", "Kent|Devon|Norfolk|Fife|Powys|Antrim"),
                   flag("certified organic", "organic|org cert|bio")),
        "mid": ent("field", "fields", "field|plot|parcel of land", label("field name", "name|field name|plot name"),
                   parts("Upper|Lower|Long|Round|Kiln|Stone|Brook|Church", "Field|Paddock|Meadow|Close"),
                   num("area in hectares", "ha|hectares|area ha", 1.0, 40.0),
                   cat("soil type", "soil|ground|soil class", "clay|loam|sand|chalk|peat")),
        "leaf": ent("harvest", "harvests", "harvest|crop record|yield", None, None,
                    cat("crop", "produce|variety|crop", "wheat|barley|apples|potatoes|oats|rapeseed"),
                    num("yield in tonnes", "tonnes|yield t|weight t", 0.5, 120.0),
                    day("harvest date", "picked on|hrv dt|cut date", 2020, 2024),
                    num("moisture", "moist pct|water content|humidity", 8.0, 25.0, nullable=0.3, additive=False)),
    }),
)

STAR = (
    Domain("cafes", "a coffee chain's sales", "star", {
        "dim1": ent("cafe", "cafes", "cafe|shop|outlet", label("cafe name", "name|cafe name|outlet name"),
                    parts("Copper|Velvet|Lantern|Juniper|Marble|Saffron", "Cup|Bean|Corner|House|Room"),
                    cat("district", "district|area|neighbourhood", "Docks|Old Town|Uni Quarter|Riverside|Centre")),
        "dim2": ent("blend", "blends", "blend|coffee|roast", label("blend name", "name|blend name|label"),
                    parts("Morning|Dark|Highland|Golden|Smoky|Wild", "Roast|Blend|Reserve|Espresso"),
                    cat("country of origin", "origin|source ctry|grown in", "Brazil|Ethiopia|Colombia|Kenya|Peru"),
                    num("price per kilo", "kg price|prc kg|cost per kg", 12.0, 60.0, additive=False)),
        "dim3": ent("barista", "baristas", "barista|staff member", PERSON, PEOPLE,
                    cat("skill level", "grade|lvl|tier", "trainee|junior|senior|head")),
        "fact": ent("sale", "sales", "sale|till sale|transaction line", None, None,
                    num("number of cups", "qty|units|cup count", 1, 8),
                    num("takings", "amt|revenue|till total", 2.5, 40.0),
                    day("sale date", "sold on|txn date|sale dt", 2023, 2024),
                    cat("payment method", "tender|pay type|paid with", "card|cash|voucher|app")),
    }),
    Domain("garages", "a network of car repair garages", "star", {
        "dim1": ent("garage", "garages", "garage|workshop", label("garage name", "name|garage name|trading name"),
                    parts("Apex|Crown|Summit|Valley|Redline|Bluebell", "Motors|Autos|Garage|Service Centre"), CITY),
        "dim2": ent("mechanic", "mechanics", "mechanic|technician|fitter", PERSON, PEOPLE,
                    flag("certified", "cert|is certified|qualified")),
        "dim3": ent("car model", "car models", "model|vehicle model|car model",
                    label("model name", "name|model name|designation"),
                    parts("Aero|Nova|Terra|Vista|Zephyr|Orion", "GT|Estate|Coupe|Van|Hatch"),
                    cat("fuel type", "fuel|power|drive", "petrol|diesel|electric|hybrid")),
        "fact": ent("repair", "repairs", "repair|job|job card", None, None,
                    num("hours of labour", "hrs|time spent|labour h", 0.5, 12.0),
                    num("cost of parts", "parts amt|material cost|spares", 0.0, 900.0),
                    day("repair date", "done on|job dt|serviced", 2022, 2024),
                    flag("covered by warranty", "warranty|under warranty|wty")),
    }),
    Domain("airwatch", "a city's air-quality monitoring", "star", {
        "dim1": ent("station", "stations", "station|monitor site|site", label("station name", "name|station name|site"),
                    parts("Riverside|Hilltop|Harbour|Airport|Old Town|Parkway", "North|South|Central|East")),
        "dim2": ent("pollutant", "pollutants", "pollutant|substance", label("pollutant", "name|pollutant|code"),
                    (("PM2.5", "PM10", "Ozone", "NO2", "SO2", "CO", "Benzene"), ()),
                    num("safe limit", "threshold|max allowed|lim val", 5.0, 200.0, additive=False)),
        "dim3": ent("analyst", "analysts", "analyst|scientist on duty|checker", PERSON, PEOPLE,
                    cat("team", "team|unit|squad", "field|lab|data|night")),
        "fact": ent("reading", "readings", "reading|measurement|observation", None, None,
                    num("measured level", "val|conc|result", 0.5, 250.0, additive=False),
                    day("measurement date", "sampled on|obs dt|ts", 2023, 2024),
                    flag("flagged for review", "qa flag|suspect|review")),
    }),
)

JUNCTION = (
    Domain("bands", "a city's music scene: musicians and the bands they play in", "junction", {
        "left": ent("musician", "musicians", "musician|artist|muso", PERSON, PEOPLE,
                    cat("main instrument", "instr|plays|primary instrument", "guitar|bass|drums|keys|vocals|sax"),
                    num("year of birth", "yob|born|birth yr", 1960, 2004, additive=False)),
        "right": ent("band", "bands", "band|group act|ensemble", label("band name", "name|band name|act"),
                     parts("Velvet|Neon|Paper|Iron|Silver|Hollow", "Tigers|Echoes|Lanterns|Foxes|Harbours"),
                     cat("genre", "style|genre|scene", "indie|jazz|metal|folk|punk|soul"),
                     num("year formed", "founded|est year|start yr", 1995, 2022, additive=False)),
        "link": ent("membership", "memberships", "membership|band member|lineup", None, None,
                    day("date they joined", "since|member from|start dt", 2010, 2024),
                    cat("role", "position|part|capacity", "lead|backing|session")),
    }, verbs=("play in", "include")),
    Domain("papers", "a research group's papers and their authors", "junction", {
        "left": ent("author", "authors", "author|researcher|writer", PERSON, PEOPLE,
                    cat("institution", "affil|org|employer", "Delft|Uppsala|Leuven|Bologna|Aarhus|Basel")),
        "right": ent("paper", "papers", "paper|publication|article record", label("title", "title|paper title|ttl"),
                     parts("Notes on|Towards|A Study of|Rethinking|On", "Sparse Graphs|Soil Carbon|Tidal Energy|"
                           "Urban Heat|Protein Folding|Market Design"),
                     day("publication date", "pub dt|published|appeared", 2015, 2024),
                     num("number of citations", "cites|cited by|cit cnt", 0, 400)),
        "link": ent("authorship", "authorships", "authorship|paper author|byline", None, None,
                    num("position in the author list", "ord|seq|author no", 1, 6, additive=False)),
    }, verbs=("wrote", "were written by")),
    Domain("hiking", "a hiking club's members and trails", "junction", {
        "left": ent("hiker", "hikers", "hiker|walker|club member", PERSON, PEOPLE, EMAIL,
                    day("joining date", "member since|joined|reg dt", 2016, 2024)),
        "right": ent("trail", "trails", "trail|route|path", label("trail name", "name|trail name|route name"),
                     parts("Eagle|Fern|Granite|Misty|Pine|Quarry", "Loop|Ridge|Path|Traverse"),
                     num("length in kilometres", "km|dist km|distance", 3.0, 40.0),
                     cat("difficulty", "grade|lvl|rating", "easy|moderate|hard|expert")),
        "link": ent("hike", "hikes", "hike|outing|walk log", None, None,
                    day("date of the hike", "walked on|hike dt|done", 2021, 2024),
                    num("hours taken", "hrs|duration|time h", 1.0, 11.0)),
    }, verbs=("have walked", "have been walked by")),
)

SELFREF = (
    Domain("staff", "a company's staff and their expense claims", "selfref", {
        "node": ent("employee", "employees", "employee|staff|emp|person", PERSON, PEOPLE,
                    cat("job title", "role|position|title", "engineer|analyst|designer|accountant|director"),
                    num("annual salary", "sal|pay|comp", 28000, 140000),
                    day("hire date", "hired on|doj|emp start", 2010, 2023)),
        "child": ent("expense claim", "expense claims", "expense claim|expense|claim", None, None,
                     num("claimed amount", "amt|total|claim value", 8.0, 1500.0),
                     day("submission date", "filed on|sub dt|created", 2022, 2024),
                     cat("expense type", "kind|exp cat|type", "travel|meals|hotel|software|training"),
                     flag("approved", "ok|is approved|approval")),
    }, refs={"self": ref("manager|line manager", "manager|reports to|boss|supervisor", verb="report to")}),
    Domain("wiki", "a knowledge base's topics and articles", "selfref", {
        "node": ent("topic", "topics", "topic|category node|subject", label("topic name", "name|topic|heading"),
                    parts("Garden|Kitchen|Travel|Money|Health|Music|Sport|Craft", "Basics|Tips|Guides|Reviews"),
                    day("creation date", "created|crtd dt|added on", 2015, 2022)),
        "child": ent("article", "articles", "article|page|entry", label("title", "title|headline|page title"),
                     parts("How to|Why We|Ten Ways to|When to|Learning to", "Prune Roses|Budget|Pack Light|"
                           "Sleep Better|Tune a Guitar|Fix a Puncture|Bake Bread"),
                     num("word count", "words|len|n words", 200, 4000),
                     day("publication date", "pub dt|went live|published", 2018, 2024),
                     num("number of views", "hits|view cnt|reads", 0, 90000)),
    }, refs={"self": ref("parent topic", "parent|parent topic|belongs to|up")}),
    Domain("files", "a team's shared file storage", "selfref", {
        "node": ent("folder", "folders", "folder|directory|dir", label("folder name", "name|folder name|title"),
                    parts("Projects|Archive|Finance|Design|Legal|Shared|Photos|Drafts", "2022|2023|2024|Old|Team"),
                    cat("owner team", "owner|team|owned by", "ops|finance|design|legal|sales")),
        "child": ent("file", "files", "file|document|doc", label("file name", "name|file name|filename"),
                     parts("report|budget|notes|plan|photo|minutes|contract", "final|v2|draft|copy|signed|old"),
                     num("size in megabytes", "mb|size mb|bytes mb", 0.1, 250.0),
                     day("last modified date", "mtime|changed on|upd dt", 2021, 2024),
                     cat("file type", "ext|format|suffix", "pdf|docx|xlsx|png|txt")),
    }, refs={"self": ref("parent folder", "parent|parent folder|inside|container")}),
)

WIDE = (
    Domain("laptops", "a shop's laptop catalogue", "wide", {"row": ent(
        "laptop", "laptops", "laptop|notebook|catalog item", label("model name", "model|name|model name"),
        parts("Zen|Aero|Flex|Core|Swift|Nimbus", "Book|Pad|Pro|Air|Lite|Max"),
        cat("brand", "make|brand|mfr", "Acorn|Bolt|Corvid|Dyna|Everest"),
        num("memory in GB", "ram gb|mem|memory gb", 4, 64, additive=False), num("storage in GB", "ssd gb|disk|storage", 128, 2048, additive=False),
        num("price", "prc|retail|list price", 299.0, 2999.0, additive=False), num("weight in kilograms", "kg|wt|mass kg", 0.9, 3.2, additive=False),
        num("screen size in inches", "display in|screen|diag", 11.0, 17.3, additive=False),
        day("release date", "launched|rel dt|available from", 2019, 2024),
        flag("in stock", "stock flag|available|instock"),
        num("review score", "stars|rtg|avg rating", 1.0, 5.0, nullable=0.25, additive=False),
        cat("colour", "color|finish|shade", "silver|black|blue|white|gold"))}),
    Domain("jobs", "a job board's postings", "wide", {"row": ent(
        "job posting", "job postings", "job posting|vacancy|job ad|listing", label("job title", "title|role|position"),
        parts("Senior|Junior|Lead|Staff|Principal|Associate", "Analyst|Designer|Engineer|Editor|Planner|Recruiter"),
        cat("employer", "org|co name|hiring company", "Quarry Labs|Tandem|Orchard Bank|Pilot Health|Kinetic"), CITY,
        num("minimum salary", "sal min|pay from|min comp", 25000, 60000, additive=False),
        num("maximum salary", "sal max|pay to|max comp", 60000, 130000, additive=False),
        flag("remote", "wfh|is remote|remote ok"), day("posting date", "listed on|post dt|opened", 2023, 2024),
        day("closing date", "close dt|deadline|expires", 2024, 2024, nullable=0.3),
        num("number of applicants", "apps|applications|cand cnt", 0, 300),
        cat("contract type", "contract|emp type|terms", "permanent|fixed term|freelance|internship"))}),
    Domain("cars", "a used-car dealer's stock", "wide", {"row": ent(
        "car", "cars", "car|vehicle|stock car|listing", label("registration plate", "reg|plate|reg no"),
        parts("AX|BF|CK|DL|EM|GR|HT|JW", "21 KLP|19 MRT|22 SNV|20 TDA|18 WZE|23 YBG"),
        cat("make", "brand|manufacturer|marque", "Volta|Kestrel|Arden|Sumo|Lumen"),
        num("mileage", "odometer|km driven|odo km", 5000, 180000, additive=False), num("asking price", "price|ask|list prc", 2500, 38000, additive=False),
        num("year of manufacture", "yr|built|mfg year", 2008, 2023, additive=False),
        cat("fuel type", "fuel|power|drive", "petrol|diesel|electric|hybrid"),
        cat("colour", "color|paint|shade", "red|grey|black|white|blue"),
        num("number of doors", "doors|door cnt|n doors", 2, 5, additive=False),
        day("first registration date", "reg dt|registered|first reg", 2008, 2023),
        flag("accident-free", "no accidents|clean history|acc free"),
        text("seller's note", "remarks|cmt|notes", "ask about {nn} service stamps", 0.5))}),
)

LINES = (
    Domain("agency", "a design agency's invoices", "lines", {
        "party": ent("client", "clients", "client|customer|account", label("client name", "name|client name|company"),
                     parts("Atlas|Beacon|Cedar|Delta|Ember|Fjord|Granite", "Studios|Logistics|Partners|Labs|Works"),
                     cat("sector", "industry|sector|vertical", "retail|health|energy|media|transport")),
        "product": ent("package", "packages", "package|work package|pkg", label("package name", "name|title|pkg name"),
                       parts("Website|Logo|Brand|Video|Photo|Copy", "Audit|Design|Refresh|Shoot|Edit|Review"),
                       num("standard rate", "list rate|std rate|base prc", 40.0, 150.0, additive=False)),
        "header": ent("invoice", "invoices", "invoice|bill|inv header", None, None,
                      day("invoice date", "issued on|inv dt|billed", 2023, 2024),
                      flag("paid", "settled|is paid|pd")),
        "line": ent("invoice line", "invoice lines", "invoice line|line item|inv detail", None, None,
                    num("hours billed", "qty|hrs|units", 1, 40, role="qty"),
                    num("rate charged", "unit price|rate|prc", 40.0, 160.0, role="price")),
    }),
    Domain("purchasing", "a workshop's purchase orders", "lines", {
        "party": ent("supplier", "suppliers", "supplier|vendor|supp", label("supplier name", "name|vendor name|firm"),
                     parts("Northern|Delta|Crown|Union|Summit|Orbit", "Metals|Timber|Supplies|Trading|Fixings"),
                     cat("country", "ctry|country|origin", "UK|Germany|Poland|Italy|Spain")),
        "product": ent("material", "materials", "material|stock item|part number",
                       label("material name", "name|description|item name"),
                       parts("Steel|Copper|Oak|Pine|Glass|Nylon", "Sheet|Rod|Panel|Tube|Bolt|Strip"),
                       cat("unit of measure", "uom|unit|measure", "kg|m|piece|box")),
        "header": ent("purchase order", "purchase orders", "purchase order|po|po header", None, None,
                      day("order date", "placed on|po dt|raised", 2023, 2024),
                      cat("status", "stat|state|po status", "open|received|cancelled|partial"),
                      day("delivery date", "rcvd on|recv dt|arrived", 2023, 2024, nullable=0.4)),
        "line": ent("order line", "order lines", "order line|po line|po item", None, None,
                    num("quantity ordered", "qty|ord qty|units", 1, 200, role="qty"),
                    num("unit cost", "unit prc|cost ea|price", 0.5, 80.0, role="price")),
    }),
    Domain("takeaway", "a takeaway restaurant's orders", "lines", {
        "party": ent("customer", "customers", "customer|diner|patron", PERSON, PEOPLE, PHONE,
                     flag("in the loyalty scheme", "loyalty|club member|rewards")),
        "product": ent("dish", "dishes", "dish|menu item|meal", label("dish name", "name|dish|menu name"),
                       parts("Spicy|Smoked|Crispy|Garlic|Lemon|Sesame", "Noodles|Tofu|Chicken|Dumplings|Rice|Salad"),
                       flag("vegetarian", "veg|is veggie|meat free"),
                       cat("menu section", "section|course|category", "starter|main|side|dessert")),
        "header": ent("order", "orders", "food order|ticket|order header", None, None,
                      day("order date", "ordered at|ord dt|placed", 2023, 2024),
                      cat("channel", "source|via|order channel", "phone|app|walk-in|web")),
        "line": ent("order item", "order items", "order item|ticket line|ord line", None, None,
                    num("portions", "qty|servings|n portions", 1, 5, role="qty"),
                    num("price per portion", "unit prc|each|price", 3.5, 16.0, role="price")),
    }),
)

TRAIN_DOMAINS = {d.key: d for d in CHAIN + STAR + JUNCTION + SELFREF + WIDE + LINES}
