-- The shop's catalog: sprout faces and backgrounds, as the SeSAC Study App Store products define
-- them. Index 0 of each kind is free, owned by everyone and has no product id.
-- Prices are KRW in milliunits (1/1000 of a won), Apple's unit: ₩1,200 = 1200000.

CREATE TABLE catalog_items (
    kind text NOT NULL CHECK (kind IN ('face', 'background')),
    item_index smallint NOT NULL CHECK (item_index >= 0),
    product_id text UNIQUE,
    name text NOT NULL,
    description text NOT NULL,
    price_milli bigint NOT NULL CHECK (price_milli >= 0),
    currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    PRIMARY KEY (kind, item_index),
    CHECK ((item_index = 0) = (product_id IS NULL)),
    CHECK ((item_index = 0) = (price_milli = 0))
);

INSERT INTO catalog_items (kind, item_index, product_id, name, description, price_milli, currency) VALUES
    ('face', 0, NULL, '기본 새싹', '새싹을 대표하는 기본 식물입니다. 다른 새싹들과 함께 하는 것을 좋아합니다.', 0, 'KRW'),
    ('face', 1, 'com.memolease.sesac1.sprout1', '튼튼 새싹', '잎이 하나 더 자라나고 튼튼해진 새나라의 새싹으로 같이 있으면 즐거워집니다.', 1200000, 'KRW'),
    ('face', 2, 'com.memolease.sesac1.sprout2', '민트 새싹', '호불호의 대명사! 상쾌한 향이 나서 허브가 대중화된 지역에서 많이 자랍니다.', 2500000, 'KRW'),
    ('face', 3, 'com.memolease.sesac1.sprout3', '퍼플 새싹', '감정을 편안하게 쉬도록 하며 슬프고 우울한 감정을 진정시켜주는 멋진 새싹입니다.', 2500000, 'KRW'),
    ('face', 4, 'com.memolease.sesac1.sprout4', '골드 새싹', '화려하고 멋있는 삶을 살며 돈과 인생을 플렉스하는 자유분방한 새싹입니다.', 2500000, 'KRW'),
    ('background', 0, NULL, '하늘 공원', '새싹들을 많이 마주치는 매력적인 하늘 공원입니다', 0, 'KRW'),
    ('background', 1, 'com.memolease.sesac1.background1', '씨티 뷰', '창밖으로 보이는 도시 야경이 아름다운 공간입니다', 1200000, 'KRW'),
    ('background', 2, 'com.memolease.sesac1.background2', '밤의 산책로', '어둡지만 무섭지 않은 조용한 산책로입니다', 1200000, 'KRW'),
    ('background', 3, 'com.memolease.sesac1.background3', '낮의 산책로', '즐겁고 가볍게 걸을 수 있는 산책로입니다', 1200000, 'KRW'),
    ('background', 4, 'com.memolease.sesac1.background4', '연극 무대', '연극의 주인공이 되어 연기를 펼칠 수 있는 무대입니다', 2500000, 'KRW'),
    ('background', 5, 'com.memolease.sesac1.background5', '라틴 거실', '모노톤의 따스한 감성의 거실로 편하게 쉴 수 있는 공간입니다', 2500000, 'KRW'),
    ('background', 6, 'com.memolease.sesac1.background6', '홈트방', '집에서 운동을 할 수 있도록 기구를 갖춘 방입니다', 2500000, 'KRW'),
    ('background', 7, 'com.memolease.sesac1.background7', '뮤지션 작업실', '여러가지 음악 작업을 할 수 있는 작업실입니다', 2500000, 'KRW');
