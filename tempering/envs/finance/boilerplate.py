"""Generic annual-report prose: the risk factors, business description and accounting
language that make a real filing long. It carries no figures a question needs, so it is
the haystack in finance/filings-long-v1; it does use the words a careless search would
hit (revenue, debt, covenant, restate), as real boilerplate does."""

from __future__ import annotations

import random

RISK_TITLES = (
    "Our results depend on general economic conditions in the markets we serve.",
    "Competition could reduce our market share and our margins.",
    "We depend on a limited number of suppliers for certain components and raw materials.",
    "Disruptions at our facilities could interrupt our operations.",
    "Our indebtedness and the covenants in our credit agreement could limit our flexibility.",
    "Changes in interest rates could increase our borrowing costs.",
    "Fluctuations in foreign currency exchange rates could reduce our reported revenue and earnings.",
    "Cybersecurity incidents could disrupt our business and harm our reputation.",
    "We may not successfully integrate acquisitions or realize their expected benefits.",
    "Goodwill and intangible assets could become impaired.",
    "Changes in tax laws or their interpretation could increase our effective tax rate.",
    "We are subject to environmental, health and safety regulations.",
    "Product liability claims could be costly.",
    "Our success depends on attracting and retaining key personnel.",
    "Inflation in labor, freight and material costs could reduce our margins.",
    "We may be required to restate our financial statements if our internal controls fail.",
    "Climate change and related regulation could affect our operations and demand for our products.",
    "Our customers may consolidate or reduce their purchases.",
    "Our intellectual property may be challenged or infringed.",
    "Litigation and regulatory proceedings could result in significant costs.",
    "Our restructuring initiatives may not achieve the expected savings.",
    "Changes in accounting standards could affect our reported results.",
    "The market price of our common stock may be volatile.",
    "Our ability to pay dividends depends on our earnings and financial condition.",
    "Pandemics and other public health events could disrupt our supply chain and demand.",
    "Geopolitical instability and trade restrictions could affect our international operations.",
    "Our information technology systems may fail or become obsolete.",
    "Seasonality may cause our quarterly results to fluctuate.",
    "Credit risk of our customers could affect our collections of accounts receivable.",
    "Pension and other post-employment obligations could require additional funding.",
)

RISK_SENTENCES = (
    "{company} operates in a competitive environment, and there can be no assurance that we will maintain our position.",
    "A downturn in demand for {products} could reduce our revenue and operating income.",
    "Many of the factors that affect our results are outside our control.",
    "If any of these risks occurs, our business, financial condition and results of operations could be adversely affected.",
    "Our credit agreement contains financial covenants, and a breach could permit our lenders to accelerate repayment.",
    "We may need to refinance our debt on terms less favorable than those currently in place.",
    "Higher interest rates would increase the interest expense on our variable-rate borrowings.",
    "Our competitors may have greater financial, technical and marketing resources than we do.",
    "Customers in the {industry} industry frequently seek price reductions, which could pressure our margins.",
    "We purchase certain materials from single sources, and a supply interruption could delay shipments.",
    "Some of our revenue is denominated in currencies other than the {currency}.",
    "A strengthening of the {currency} would reduce the reported value of our foreign-currency revenue.",
    "Unauthorized access to our systems could expose confidential information and lead to regulatory penalties.",
    "We continue to invest in security controls, but no system is immune to attack.",
    "Acquired businesses may not perform as expected, and integration may divert management attention.",
    "An impairment charge would reduce our reported earnings but would not affect our cash flows.",
    "Tax authorities may disagree with positions we have taken, which could result in additional tax liabilities.",
    "Compliance with environmental laws requires ongoing expenditures, and new laws could increase these costs.",
    "We could incur significant costs to defend claims even when they lack merit.",
    "The loss of members of our senior management team could disrupt our operations.",
    "Labor shortages or work stoppages could increase our costs or delay production.",
    "We may not be able to pass higher costs on to our customers in a timely manner.",
    "A material weakness in internal control over financial reporting could require us to restate previously issued financial statements.",
    "Restating financial statements could cause investors to lose confidence in our reported results.",
    "Climate-related events such as floods or storms could damage our facilities or those of our suppliers.",
    "Several large customers account for a significant portion of our revenue in the {industry} industry.",
    "We rely on patents, trademarks and trade secrets, which may not provide adequate protection.",
    "Adverse outcomes in legal proceedings could require us to pay damages or change our business practices.",
    "The expected cost savings from our restructuring programs may take longer to realize than planned.",
    "New accounting pronouncements may require us to change how we recognize revenue or present our results.",
    "The trading price of our shares may fluctuate widely in response to our results or to market conditions.",
    "Our board of directors may reduce or suspend dividends at any time.",
    "Public health events have in the past reduced demand for {products} and disrupted logistics.",
    "Export controls, tariffs and sanctions could restrict our ability to sell in certain markets.",
    "Failures in our enterprise systems could delay billing and collections.",
    "Our revenue and operating results have historically varied from quarter to quarter.",
    "Deterioration in customers' financial condition could increase our credit losses.",
    "Changes in discount rates or asset returns could increase our pension obligations.",
    "We may be unable to obtain financing on acceptable terms, which could limit our investments in growth.",
    "Our operations require significant working capital, including inventories and accounts receivable.",
    "Any of these events could cause actual results to differ materially from our expectations.",
    "The risks described here are not the only ones we face; others may also impair our business.",
)

BUSINESS_SENTENCES = (
    "{company} designs, manufactures and sells {products} to customers around the world.",
    "We were founded more than four decades ago and have grown through product innovation and acquisitions.",
    "Our strategy is to deepen relationships with existing customers and expand into adjacent markets.",
    "We sell through a direct sales force, distributors and online channels.",
    "Our customers range from small businesses to large multinational enterprises in the {industry} industry.",
    "We compete on the basis of quality, reliability, service and price.",
    "Our research and development teams work closely with customers to develop new offerings.",
    "We source raw materials and components from suppliers in North America, Europe and Asia.",
    "We hold patents and trademarks that we consider important to our business.",
    "We employ several thousand people, most of them outside our headquarters country.",
    "Our operations are subject to laws on product safety, data privacy, trade and the environment.",
    "Demand for {products} follows broader industrial and consumer activity.",
    "We continue to invest in automation and digital tools to improve productivity.",
    "Sustainability is part of our operating model, and we report on emissions and energy use annually.",
    "Our backlog and order trends are monitored weekly by management.",
)

POLICY_SENTENCES = (
    "Estimates and assumptions affect the reported amounts of assets, liabilities, revenue and expenses.",
    "Actual results could differ from these estimates.",
    "The consolidated financial statements include the accounts of {company} and its subsidiaries.",
    "Intercompany transactions and balances have been eliminated.",
    "Assets and liabilities are tested for impairment when events indicate that their carrying amount may not be recoverable.",
    "Fair value is the price that would be received to sell an asset in an orderly transaction between market participants.",
    "Foreign-currency assets and liabilities are translated at year-end exchange rates.",
    "Revenue is recognized when control of the promised goods or services transfers to the customer.",
    "Contracts with multiple performance obligations are allocated on a relative standalone selling price basis.",
    "Leases are recognized as right-of-use assets and lease liabilities at commencement.",
    "Deferred taxes reflect temporary differences between the book and tax bases of assets and liabilities.",
    "Contingencies are accrued when a loss is probable and can be reasonably estimated.",
    "Share-based compensation is measured at grant-date fair value and recognized over the vesting period.",
    "Property, plant and equipment are depreciated on a straight-line basis over their useful lives.",
    "Goodwill is tested for impairment annually in the fourth quarter and whenever indicators arise.",
    "Inventories are stated at the lower of cost and net realizable value, cost determined on a first-in, first-out basis.",
    "The allowance for credit losses reflects expected losses over the life of receivables.",
    "Management evaluated subsequent events through the date the financial statements were issued.",
)

MARKET_SENTENCES = (
    "We are exposed to market risks from changes in interest rates, foreign-currency exchange rates and commodity prices.",
    "We may use derivative instruments to manage these exposures; we do not use them for speculation.",
    "A hypothetical one percentage point increase in interest rates would change our annual interest expense on variable-rate debt.",
    "A hypothetical ten percent change in exchange rates would change the reported value of our foreign operations.",
    "Commodity price changes affect the cost of raw materials, which we seek to pass on to customers over time.",
    "Our counterparties are major financial institutions with investment-grade credit ratings.",
)

CONTROL_SENTENCES = (
    "Management evaluated the effectiveness of our disclosure controls and procedures as of the end of the period.",
    "Based on that evaluation, management concluded that our disclosure controls and procedures were effective.",
    "There were no changes in internal control over financial reporting that materially affected, or are reasonably likely to materially affect, it.",
    "Internal control over financial reporting has inherent limitations and may not prevent or detect all misstatements.",
    "Our independent registered public accounting firm has issued an attestation report on internal control over financial reporting.",
)


def paragraph(rng: random.Random, sentences: tuple[str, ...], n: int, **fields: str) -> str:
    return " ".join(s.format(**fields) for s in rng.sample(sentences, min(n, len(sentences))))


def risk_factors(rng: random.Random, chars: int, **fields: str) -> str:
    """Risk factors of at least `chars` characters: titled risks, two or three paragraphs each."""
    parts: list[str] = []
    size = 0
    while size < chars:
        title = rng.choice(RISK_TITLES)
        body = [paragraph(rng, RISK_SENTENCES, rng.randint(4, 7), **fields) for _ in range(rng.randint(2, 3))]
        block = f"**{title}**\n" + "\n".join(body)
        parts.append(block)
        size += len(block) + 1
    return "\n".join(parts)
